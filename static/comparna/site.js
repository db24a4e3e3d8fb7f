/* CompaRNA progressive enhancement: client-side table sorting and filtering, Plotly charts.
   Every table works without JavaScript (server-side ?sort= and ?kind= links); this only avoids reloads. */
(function () {
  "use strict";

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return numeric ? -Infinity : "";
    var raw = cell.getAttribute("data-value");
    if (raw === null) raw = cell.textContent.trim();
    if (!numeric) return raw.toLowerCase();
    var x = parseFloat(raw);
    return isNaN(x) ? -Infinity : x;
  }

  function sortTable(table, index, numeric, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      if (x < y) return dir === "asc" ? -1 : 1;
      if (x > y) return dir === "asc" ? 1 : -1;
      return 0;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, k) {
      th.setAttribute("aria-sort", k === index ? (dir === "asc" ? "ascending" : "descending") : "none");
    });
  }

  function initSortable(table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      var link = th.querySelector("a.sort");
      if (!link) return;
      link.addEventListener("click", function (event) {
        event.preventDefault();
        var current = th.getAttribute("aria-sort");
        var numeric = th.classList.contains("num");
        var dir = current === "ascending" ? "desc" : current === "descending" ? "asc" : (numeric ? "desc" : "asc");
        if (th.getAttribute("data-key") === "rank") dir = current === "ascending" ? "desc" : "asc";
        sortTable(table, index, numeric, dir);
        var url = new URL(window.location.href);
        url.searchParams.set("sort", th.getAttribute("data-key"));
        url.searchParams.set("dir", dir);
        window.history.replaceState(null, "", url);
      });
    });
  }

  function initKindFilter(form) {
    var table = document.getElementById(form.getAttribute("data-table"));
    if (!table) return;
    var apply = function () {
      var kind = form.querySelector("input[name=kind]:checked");
      kind = kind ? kind.value : "all";
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var rowKind = row.getAttribute("data-kind");
        var visible = kind === "all" || rowKind === kind;
        row.hidden = !visible;
        if (visible) shown += 1;
      });
      var counter = document.getElementById(form.getAttribute("data-counter"));
      if (counter) counter.textContent = String(shown);
      var url = new URL(window.location.href);
      url.searchParams.set("kind", kind);
      window.history.replaceState(null, "", url);
    };
    Array.prototype.forEach.call(form.querySelectorAll("input[name=kind]"), function (input) {
      input.addEventListener("change", apply);
    });
    var button = form.querySelector("button[type=submit]");
    if (button) button.hidden = true;
  }

  /* On a narrow screen (a phone) a legend beside the plot would cover it or squeeze it to a sliver: it goes
     below the plot instead, in rows, and the figure grows by the legend's height so the plot keeps its size
     (issue 37: the rank history's legend covered the plot at 390 px). */
  function legendBelowWhenNarrow(div, figure) {
    var layout = figure.layout || (figure.layout = {});
    if (div.clientWidth >= 600 || layout.showlegend === false) return;
    if (layout.legend && layout.legend.orientation === "h") return;
    var entries = (figure.data || []).filter(function (t) { return t.showlegend !== false; }).length;
    if (entries < 2) return;
    var perRow = Math.max(1, Math.floor(div.clientWidth / 125));
    var extra = 22 * Math.ceil(entries / perRow) + 30;
    layout.legend = Object.assign({}, layout.legend || {}, {
      orientation: "h", x: 0, xanchor: "left", y: -0.12, yanchor: "top", entrywidth: 115, font: {size: 10}
    });
    var margin = layout.margin || (layout.margin = {});
    margin.b = (margin.b || 40) + extra;
    margin.r = Math.min(margin.r || 20, 20);
    layout.height = (layout.height || 450) + extra;
    // the y of a legend below is in units of the plot's height: place it just under the x axis title
    layout.legend.y = -((margin.b - extra) / (layout.height - margin.b - (margin.t || 20)));
  }

  function initCharts() {
    var charts = document.querySelectorAll("[data-figure]");
    if (!charts.length) return;
    if (typeof window.Plotly === "undefined") return;
    Array.prototype.forEach.call(charts, function (div) {
      var source = document.getElementById(div.getAttribute("data-figure") + "-json");
      if (!source) return;
      var figure = JSON.parse(source.textContent);
      legendBelowWhenNarrow(div, figure);
      window.Plotly.newPlot(div, figure.data, figure.layout, {responsive: true, displaylogo: false})
        .then(function () {
          div.classList.add("rendered");
          // a figure whose layout.meta.point_link is a site path with "{id}" opens it, filled with the
          // clicked point's customdata (a target's id), on click
          var pattern = figure.layout && figure.layout.meta && figure.layout.meta.point_link;
          if (typeof pattern !== "string" || pattern.charAt(0) !== "/" || pattern.charAt(1) === "/") return;
          div.on("plotly_click", function (event) {
            var point = event && event.points && event.points[0];
            var id = point && point.customdata;
            if (typeof id === "number" && isFinite(id)) {
              window.location.assign(pattern.replace("{id}", String(id)));
            }
          });
        });
    });
  }

  /* The responsive table design (site.css, issue 29): every data table with a header row of at least
     three columns gets its cells labelled with their column's header and becomes "cards" (one card per row)
     on phones; grids (methods or families as columns) instead keep scrolling with sticky axes. */
  function headerLabels(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) return null;
    var labels = [];
    Array.prototype.forEach.call(head.cells, function (th) {
      var text = th.getAttribute("data-label") || th.textContent.replace(/\s+/g, " ").trim();
      for (var k = 0; k < (th.colSpan || 1); k++) labels.push(text);
    });
    return labels;
  }

  function initCards(table) {
    if (table.classList.contains("grid") || !table.tBodies.length) return;
    var labels = headerLabels(table);
    if (!labels || labels.length < 3) return;
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        var col = 0;
        Array.prototype.forEach.call(row.cells, function (cell) {
          if (!cell.hasAttribute("data-label") && (cell.colSpan || 1) === 1 && labels[col]) {
            cell.setAttribute("data-label", labels[col]);
          }
          col += cell.colSpan || 1;
        });
      });
    });
    table.classList.add("cards");
  }

  function initZoom(box) {
    var table = box.querySelector("table");
    if (!table) return;
    var size = 100;
    var control = document.createElement("p");
    control.className = "zoom-control";
    control.textContent = "Zoom:";
    [["−", -15, "Smaller"], ["+", 15, "Larger"], ["100 %", 0, "Original size"]].forEach(function (spec) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = spec[0];
      button.title = spec[2];
      button.setAttribute("aria-controls", table.id || "");
      button.addEventListener("click", function () {
        size = spec[1] === 0 ? 100 : Math.max(40, Math.min(200, size + spec[1]));
        table.style.fontSize = size + "%";
      });
      control.appendChild(button);
    });
    box.parentNode.insertBefore(control, box);
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("main table.data"), initCards);
    Array.prototype.forEach.call(document.querySelectorAll(".scroll.zoomable, .table-scroll"), initZoom);
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), initSortable);
    Array.prototype.forEach.call(document.querySelectorAll("form.kind-filter"), initKindFilter);
    initCharts();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
