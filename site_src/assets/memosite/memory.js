/* memosite: the Memory page's record table.
 *
 * Reads records.json and renders one row per record. Every value from the data goes into the
 * page through textContent or an attribute, never as HTML. The script is loaded on every page
 * and runs again on each of Material's instant navigations (document$), initialising any table
 * that the new page holds.
 */
(function () {
  "use strict";

  var SEVERITY_ORDER = { critical: 4, high: 3, medium: 2, low: 1 };
  /* What `memosite verify` last found of the code a record cites; records citing none have no value. */
  var FRESHNESS_ORDER = { missing: 3, drifted: 2, fresh: 1 };
  var DAY_END = "T23:59:59.999Z";

  /* The combining marks memosite's folding removes (memosite.text.fold strips every mark of a
     non-zero combining class): those of Latin, Greek, Cyrillic, Hebrew and Arabic letters and the
     kana voicing marks. tests/test_memory_filter.py holds this list to Python's, character by
     character. */
  var MARKS = new RegExp(
    "[" +
      "\\u0300-\\u034e\\u0350-\\u036f\\u0483-\\u0487" + // Latin, Greek, Cyrillic
      "\\u0591-\\u05bd\\u05bf\\u05c1\\u05c2\\u05c4\\u05c5\\u05c7" + // Hebrew
      "\\u0610-\\u061a\\u064b-\\u065f\\u0670\\u06d6-\\u06dc\\u06df-\\u06e4\\u06e7\\u06e8\\u06ea-\\u06ed" + // Arabic
      "\\u1ab0-\\u1abd\\u1abf-\\u1ace\\u1dc0-\\u1dff\\u20d0-\\u20dc\\u20e1\\u20e5-\\u20f0\\ufe20-\\ufe2f" + // extended
      "\\u3099\\u309a" + // kana voicing
      "]",
    "g"
  );

  /* Text as memosite's search compares it: lower case (ß as ss, a final sigma as σ), without the
     marks above, compatibility forms made plain, so "cafe" finds "Café" and "замок" "Замо́к". */
  function fold(text) {
    return String(text)
      .toLowerCase()
      .replace(/\u00df/g, "ss")
      .replace(/\u03c2/g, "\u03c3")
      .normalize("NFKD")
      .replace(/\u0345/g, "\u03b9")
      .replace(MARKS, "")
      .normalize("NFKC");
  }

  function parseTime(value) {
    if (!value) return null;
    var time = Date.parse(value);
    return isNaN(time) ? null : time;
  }

  /* Expired from the exact expiry instant on, as memosite's own rule says. */
  function expiredAt(record, moment) {
    var expires = parseTime(record.expires_at);
    return expires !== null && moment >= expires;
  }

  /* As Of is a day: the records active at the end of that UTC day. */
  function asOfMoment(value) {
    return value ? parseTime(value + DAY_END) : null;
  }

  /* As Of shows what was active on that day — created by then and not yet expired then —
     whatever Hide expired says; Hide expired alone hides what has expired by now. */
  function visible(record, state, now) {
    if (state.asOf !== null) {
      var created = parseTime(record.created);
      if (created !== null && created > state.asOf) return false;
      if (expiredAt(record, state.asOf)) return false;
    } else if (state.hideExpired && expiredAt(record, now)) {
      return false;
    }
    if (state.project && record.project !== state.project) return false;
    if (state.kind && record.kind !== state.kind) return false;
    if (state.status && record.status !== state.status) return false;
    if (state.severity && record.severity !== state.severity) return false;
    if (state.freshness && record.freshness !== state.freshness) return false;
    if (state.query) {
      var haystack = searchText(record);
      var words = fold(state.query).split(/\s+/).filter(Boolean);
      for (var i = 0; i < words.length; i++) {
        if (haystack.indexOf(words[i]) === -1) return false;
      }
    }
    return true;
  }

  /* A record's title, id, project, kind and tags, folded once per page load. */
  var folded = new WeakMap();
  function searchText(record) {
    var text = folded.get(record);
    if (text === undefined) {
      text = fold([record.title, record.id, record.project, record.kind].concat(record.tags || []).join(" "));
      folded.set(record, text);
    }
    return text;
  }

  function sortValue(record, key) {
    if (key === "severity") return SEVERITY_ORDER[record.severity] || 0;
    if (key === "freshness") return FRESHNESS_ORDER[record.freshness] || 0;
    var value = record[key];
    return value === null || value === undefined ? "" : String(value).toLowerCase();
  }

  function compare(key, direction) {
    var sign = direction === "ascending" ? 1 : -1;
    return function (a, b) {
      var left = sortValue(a, key);
      var right = sortValue(b, key);
      if (left < right) return -sign;
      if (left > right) return sign;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    };
  }

  function day(value) {
    return value ? String(value).slice(0, 10) : "";
  }

  function cell(row, text, className) {
    var td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "" : String(text);
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function chip(parent, text, modifier) {
    var span = document.createElement("span");
    span.className = "memosite-chip memosite-chip--" + modifier;
    span.textContent = text;
    parent.appendChild(document.createTextNode(" "));
    parent.appendChild(span);
  }

  /* Chips and row styles say what was true at the moment the table shows: As of, else now. */
  function renderRow(record, base, now) {
    var row = document.createElement("tr");
    row.dataset.id = record.id;
    row.dataset.kind = record.kind;
    var titleCell = document.createElement("td");
    var link = document.createElement("a");
    link.textContent = record.title || record.id;
    try {
      link.href = new URL(record.url, base).href;
    } catch (error) {
      link.removeAttribute("href");
    }
    titleCell.appendChild(link);
    if (expiredAt(record, now)) {
      row.classList.add("memosite-row--expired");
      chip(titleCell, "expired", "expired");
    }
    if (record.review === "pending") {
      row.classList.add("memosite-row--unreviewed");
      chip(titleCell, "unreviewed", "unreviewed");
    }
    row.appendChild(titleCell);
    cell(row, record.kind);
    cell(row, record.project);
    cell(row, record.status, "memosite-status memosite-status--" + record.status);
    /* The severity is a badge inside its cell, so it sits on the row's baseline like the text. */
    var severity = cell(row, "", "memosite-severity-cell");
    if (record.severity) {
      var badge = document.createElement("span");
      var level = SEVERITY_ORDER[record.severity] ? record.severity : "unrated";
      badge.className = "memosite-severity memosite-severity--" + level;
      badge.textContent = String(record.severity);
      severity.appendChild(badge);
    }
    var freshness = cell(row, "", "memosite-freshness-cell");
    if (record.freshness === "drifted" || record.freshness === "missing") {
      var flag = document.createElement("span");
      flag.className = "memosite-chip memosite-chip--" + record.freshness;
      flag.textContent = record.freshness;
      freshness.appendChild(flag);
    } else if (record.freshness) {
      freshness.textContent = String(record.freshness);
    }
    cell(row, day(record.updated));
    cell(row, record.expires_at ? day(record.expires_at) : "never");
    return row;
  }

  function fillOptions(select, values) {
    values.forEach(function (value) {
      var option = document.createElement("option");
      option.value = value;
      option.textContent = value;
      select.appendChild(option);
    });
  }

  function distinct(records, key, order) {
    var seen = {};
    records.forEach(function (record) {
      if (record[key]) seen[record[key]] = true;
    });
    var values = Object.keys(seen);
    return order ? values.sort(function (a, b) { return (order[b] || 0) - (order[a] || 0); }) : values.sort();
  }

  var FILTERS = ["q", "project", "kind", "status", "severity", "freshness", "asOf"];

  /* Filters live in the address (?kind=trap&asOf=2026-01-31...), so a view can be shared. */
  function restoreFilters(form, sort, params) {
    FILTERS.forEach(function (name) {
      var value = params.get(name);
      if (value === null) return;
      var field = form.elements[name];
      if (field.tagName === "SELECT" && !Array.prototype.some.call(field.options, function (o) { return o.value === value; })) {
        var option = document.createElement("option");
        option.value = value;
        option.textContent = value;
        field.appendChild(option);
      }
      field.value = value;
    });
    if (params.get("hideExpired") === "0") form.elements.hideExpired.checked = false;
    if (params.get("sort")) sort.key = params.get("sort");
    if (params.get("dir") === "ascending" || params.get("dir") === "descending") sort.direction = params.get("dir");
  }

  function saveFilters(form, sort) {
    var params = new URLSearchParams(window.location.search);
    FILTERS.forEach(function (name) {
      var value = form.elements[name].value.trim();
      if (value) params.set(name, value);
      else params.delete(name);
    });
    if (form.elements.hideExpired.checked) params.delete("hideExpired");
    else params.set("hideExpired", "0");
    if (sort.key !== "updated" || sort.direction !== "descending") {
      params.set("sort", sort.key);
      params.set("dir", sort.direction);
    } else {
      params.delete("sort");
      params.delete("dir");
    }
    var query = params.toString();
    var url = window.location.pathname + (query ? "?" + query : "") + window.location.hash;
    try {
      window.history.replaceState(window.history.state, "", url);
    } catch (error) {
      /* file:// pages may refuse; the filters still work */
    }
  }

  function readState(form, sort) {
    return {
      query: form.elements.q.value.trim(),
      project: form.elements.project.value,
      kind: form.elements.kind.value,
      status: form.elements.status.value,
      severity: form.elements.severity.value,
      freshness: form.elements.freshness.value,
      asOf: asOfMoment(form.elements.asOf.value),
      hideExpired: form.elements.hideExpired.checked,
      sortKey: sort.key,
      sortDirection: sort.direction
    };
  }

  function setup(container) {
    container.dataset.memositeReady = "true";
    var form = container.querySelector("form");
    var body = container.querySelector("tbody");
    var count = container.querySelector(".memosite-memory__count");
    var headers = container.querySelectorAll("th[data-sort]");
    var empty = container.querySelector(".memosite-memory__empty");
    var source = new URL(container.dataset.records || "records.json", window.location.href);
    var sort = { key: "updated", direction: "descending" };
    var records = [];

    function render() {
      var now = Date.now();
      var state = readState(form, sort);
      var moment = state.asOf !== null ? state.asOf : now;
      var shown = records.filter(function (record) { return visible(record, state, now); });
      shown.sort(compare(state.sortKey, state.sortDirection));
      var fragment = document.createDocumentFragment();
      shown.forEach(function (record) { fragment.appendChild(renderRow(record, source, moment)); });
      body.replaceChildren(fragment);
      count.textContent = "Showing " + shown.length + " of " + records.length + " records" +
        (state.asOf !== null ? " as of " + form.elements.asOf.value : "");
      if (empty) {
        empty.hidden = shown.length > 0;
        empty.textContent = records.length === 0
          ? "No records have been published yet."
          : "No records match these filters. Clear a filter, pick another As of date or switch off Hide expired.";
      }
      saveFilters(form, sort);
      headers.forEach(function (th) {
        if (th.dataset.sort === sort.key) th.setAttribute("aria-sort", sort.direction);
        else th.removeAttribute("aria-sort");
      });
    }

    headers.forEach(function (th) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "memosite-sort";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () {
        var key = th.dataset.sort;
        if (sort.key === key) {
          sort.direction = sort.direction === "ascending" ? "descending" : "ascending";
        } else {
          sort.key = key;
          sort.direction = key === "updated" || key === "severity" || key === "freshness" ? "descending" : "ascending";
        }
        render();
      });
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.addEventListener("input", render);
    form.addEventListener("change", render);

    fetch(source.href, { cache: "no-cache" })
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + " " + response.statusText);
        return response.json();
      })
      .then(function (data) {
        records = Array.isArray(data.records) ? data.records : [];
        fillOptions(form.elements.project, distinct(records, "project"));
        fillOptions(form.elements.kind, distinct(records, "kind"));
        fillOptions(form.elements.status, distinct(records, "status"));
        fillOptions(form.elements.severity, distinct(records, "severity", SEVERITY_ORDER));
        fillOptions(form.elements.freshness, distinct(records, "freshness", FRESHNESS_ORDER));
        restoreFilters(form, sort, new URLSearchParams(window.location.search));
        container.dataset.memositeLoaded = "true";
        render();
      })
      .catch(function (error) {
        container.dataset.memositeFailed = "true";
        if (window.location.protocol === "file:") {
          count.textContent = "This page was opened from a file (file://), and browsers do not let a page " +
            "read records.json from disk, so the table cannot be filled here. Serve the site folder instead " +
            "(for example `python3 -m http.server` inside it, or `memosite serve`) and open it over http://. " +
            "The project pages linked below list every record without it.";
        } else {
          count.textContent = "Could not load the records (" + error.message + ").";
        }
      });
  }

  function init() {
    var containers = document.querySelectorAll(".memosite-memory:not([data-memosite-ready])");
    for (var i = 0; i < containers.length; i++) setup(containers[i]);
  }

  /* The folding, for other scripts of the site (and the test that holds it to memosite's). */
  window.memosite = window.memosite || {};
  window.memosite.fold = fold;

  /* Material announces each (instant) navigation on document$; the page's own load covers the
     first page, and pages where document$ never fires (opened from file://, other themes). */
  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(init);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
