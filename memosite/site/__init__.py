"""The published site: build, serve and publish a vault with MkDocs Material."""
