/* wincon dashboard: renders data.js (window.WINCON_DASHBOARD) into the grid, area, limitation and run views. */
(function () {
  "use strict";

  var DATA = window.WINCON_DASHBOARD;
  var VERDICTS = {
    P: "passed", F: "failed", X: "xfailed", L: "xpassed", S: "skipped", E: "error", ".": "missing",
    "-": "none", n: "notrun",
  };
  var LABELS = {
    passed: "passed",
    failed: "failed",
    xfailed: "expected failure (documented limitation)",
    xpassed: "limitation appears lifted",
    skipped: "skipped",
    error: "infrastructure error",
    missing: "not run",
    none: "no Linux control",
    notrun: "Linux control not in this run",
  };
  var CONTROLS = DATA && DATA.controls ? DATA.controls : [];
  var RESULT_VERDICTS = ["passed", "failed", "xfailed", "xpassed", "skipped", "error"];

  function esc(text) {
    return String(text == null ? "" : text)
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  // "suites/networking/test_dns.py::test_x[udp]" -> "test_dns.py::test_x[udp]": the area is shown beside it.
  function shortName(name) {
    return name.replace(/^suites\/[^/]+\//, "");
  }

  function pct(rate) {
    return rate == null ? "n/a" : (rate * 100).toFixed(1) + "%";
  }

  function when(epoch) {
    return epoch ? new Date(epoch * 1000).toISOString().replace("T", " ").slice(0, 16) + "Z" : "";
  }

  function runTitle(run) {
    var c = run.cluster;
    return run.label + " (build " + run.build + ", " + run.result + ")\n" + when(run.started) +
      "\nkubernetes " + c.k8s + "; windows " + c.windows_build + "; cni " + c.cni;
  }

  function limitationsOf(message) {
    var found = [];
    var re = /limitation ([a-z0-9-]+(?:, [a-z0-9-]+)*)/g;
    var m;
    while ((m = re.exec(message || "")) !== null) {
      m[1].split(", ").forEach(function (id) { if (found.indexOf(id) < 0) found.push(id); });
    }
    return found;
  }

  // ------------------------------------------------------------------ errors (bad results directories)
  function renderErrors() {
    if (!DATA.errors.length) return;
    var box = document.getElementById("errors");
    box.hidden = false;
    box.innerHTML = "<strong>" + DATA.errors.length + " results director" + (DATA.errors.length === 1 ? "y" : "ies") +
      " could not be read and " + (DATA.errors.length === 1 ? "is" : "are") + " left out:</strong><ul>" +
      DATA.errors.map(function (e) {
        return "<li>" + esc(e.message) + (e.fix ? "<br><em>fix: " + esc(e.fix) + "</em>" : "") + "</li>";
      }).join("") + "</ul>";
  }

  // ------------------------------------------------------------------ grid
  function renderLegend() {
    document.getElementById("legend").innerHTML =
      '<span><i class="swatch v-passed"></i><i class="swatch l v-passed"></i>each run: Windows | Linux control</span>' +
      Object.keys(LABELS).map(function (v) {
        return '<span><i class="swatch v-' + v + '"></i>' + esc(LABELS[v]) + "</span>";
      }).join("");
  }

  // The run and the OS of a grid cell: each run has two cells, Windows (td.c) then its Linux control (td.l).
  function cellRun(cell) {
    return (cell.cellIndex - 1) >> 1;
  }

  function renderGrid() {
    var runs = DATA.runs;
    var head = ['<thead><tr><th class="test">check \u2193 / run \u2192 (newest first; each run: Windows | Linux control)</th>'];
    runs.forEach(function (run, r) {
      head.push('<th colspan="2" data-run="' + r + '" title="' + esc(runTitle(run)) + '">' +
        esc(when(run.started).slice(5)) + "</th>");
    });
    head.push("</tr></thead>");
    var body = ["<tbody>"];
    DATA.tests.forEach(function (test, t) {
      var row = DATA.grid[t];
      var controls = CONTROLS[t] || "";
      var title = test.name + "\n" + test.id + (test.control ? "\nLinux control: " + test.control : "\nno Linux control");
      body.push('<tr data-t="' + t + '"><th class="test" title="' + esc(title) + '">' +
        '<span class="area-tag">' + esc(test.area) + "</span>" + esc(shortName(test.name)) + "</th>");
      for (var r = 0; r < row.length; r++) {
        var code = row.charAt(r);
        var verdict = VERDICTS[code];
        var extra = "";
        if (code === "X" || code === "L") {
          var ids = limitationsOf(DATA.notes[t + ":" + r]);
          if (!ids.length) ids = test.limitations;
          extra = ' data-limitation="' + esc(ids.join(",")) + '"';
        }
        body.push('<td class="c v-' + verdict + '" data-verdict="' + verdict + '"' + extra + "></td>");
        var control = VERDICTS[controls.charAt(r) || "."];
        body.push('<td class="l v-' + control + '" data-verdict="' + control + '"></td>');
      }
      body.push("</tr>");
    });
    body.push("</tbody>");
    var table = document.getElementById("grid");
    table.innerHTML = head.join("") + body.join("");
    // Hover text is made on demand: 30 000 title attributes up front would slow the first paint.
    table.addEventListener("mouseover", function (event) {
      var cell = event.target.closest("td.c, td.l");
      if (!cell || cell.title) return;
      var t = +cell.parentNode.dataset.t;
      var r = cellRun(cell);
      var test = DATA.tests[t];
      var verdict = cell.dataset.verdict;
      var linux = cell.classList.contains("l");
      var text = linux
        ? (test.control || test.name) + "\n" + DATA.runs[r].label + ": Linux control: " + LABELS[verdict]
        : test.name + "\n" + DATA.runs[r].label + ": Windows: " + LABELS[verdict];
      var note = (linux ? DATA.control_notes || {} : DATA.notes)[t + ":" + r];
      if (note) text += "\n" + note;
      if (cell.dataset.limitation) text += "\nlimitation: " + cell.dataset.limitation;
      cell.title = text;
    });
    table.querySelector("thead").addEventListener("click", function (event) {
      var th = event.target.closest("th[data-run]");
      if (th) { showView("runs"); selectRun(+th.dataset.run); }
    });
  }

  function renderFilters() {
    var select = document.getElementById("marker-filter");
    DATA.markers.forEach(function (m) {
      var option = document.createElement("option");
      option.value = m;
      option.textContent = m;
      select.appendChild(option);
    });
    select.addEventListener("change", applyFilters);
    document.getElementById("text-filter").addEventListener("input", applyFilters);
    document.getElementById("problems-filter").addEventListener("change", applyFilters);
    document.getElementById("controls-toggle").addEventListener("change", function (event) {
      document.getElementById("grid").classList.toggle("no-controls", !event.target.checked);
    });
    // #q=TEXT (the Allure report links a check's twins this way) fills the name filter.
    var match = /^#q=(.*)$/.exec(window.location.hash);
    if (match) document.getElementById("text-filter").value = decodeURIComponent(match[1]);
  }

  function applyFilters() {
    var marker = document.getElementById("marker-filter").value;
    var text = document.getElementById("text-filter").value.toLowerCase();
    var problems = document.getElementById("problems-filter").checked;
    var rows = document.querySelectorAll("#grid tbody tr");
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var test = DATA.tests[i];
      var visible = (!marker || test.markers.indexOf(marker) >= 0) &&
        (!text || test.name.toLowerCase().indexOf(text) >= 0 || test.id.toLowerCase().indexOf(text) >= 0 ||
          (test.control || "").toLowerCase().indexOf(text) >= 0) &&
        (!problems || /[FEL]/.test(DATA.grid[i]) || /[FE]/.test(CONTROLS[i] || ""));
      rows[i].hidden = !visible;
      if (visible) shown++;
    }
    document.getElementById("shown-count").textContent = shown + " of " + rows.length + " tests, " +
      DATA.runs.length + " runs";
  }

  // ------------------------------------------------------------------ areas
  function renderAreas() {
    var runs = DATA.runs;
    var html = ["<thead><tr><th>area</th><th>tests</th><th>pass rate (all runs)</th>"];
    RESULT_VERDICTS.forEach(function (v) {
      html.push("<th>" + esc(v) + "</th>");
    });
    runs.slice(0, 10).forEach(function (run) {
      html.push('<th title="' + esc(runTitle(run)) + '">' + esc(when(run.started).slice(5, 16)) + "</th>");
    });
    html.push("</tr></thead><tbody>");
    DATA.areas.forEach(function (area) {
      html.push('<tr data-area="' + esc(area.area) + '"><td>' + esc(area.area) + "</td><td>" + area.tests + "</td>" +
        '<td class="rate">' + pct(area.rate) + ' <span class="rate-bar" style="width:' +
        Math.round((area.rate || 0) * 60) + 'px"></span></td>');
      RESULT_VERDICTS.forEach(function (v) {
        html.push("<td>" + (area.total[v] || 0) + "</td>");
      });
      area.runs.slice(0, 10).forEach(function (cell) {
        html.push('<td class="rate">' + pct(cell.rate) + "</td>");
      });
      html.push("</tr>");
    });
    html.push("</tbody>");
    document.getElementById("areas").innerHTML = html.join("");
  }

  // ------------------------------------------------------------------ limitations
  function renderLimitations() {
    var box = document.getElementById("limitations");
    if (!DATA.limitations.length) {
      box.innerHTML = "<p>No test of these runs carries a limitation.</p>";
      return;
    }
    box.innerHTML = DATA.limitations.map(function (lim) {
      var rows = lim.clusters.map(function (c) {
        var latest = DATA.runs[c.latest];
        return '<tr data-status="' + esc(c.status) + '"><td>' + esc(c.cni) + "</td><td>" + esc(c.windows_build) +
          "</td><td>" + esc(c.k8s) + '</td><td class="status-' + esc(c.status.replace(/ /g, "-")) + '">' +
          esc(c.status) + "</td><td>" + c.shows + "</td><td>" + c.lifted + "</td><td>" + c.not_applied +
          "</td><td>" + c.runs.length + "</td><td>" + esc(latest ? latest.label : "") + "</td></tr>";
      }).join("");
      return '<div class="lim" data-limitation="' + esc(lim.id) + '"><h3>' + esc(lim.id) +
        (lim.title ? ": " + esc(lim.title) : "") + "</h3><table><thead><tr><th>CNI</th><th>Windows build</th>" +
        "<th>Kubernetes</th><th>status</th><th>expected failures</th><th>unexpected passes</th>" +
        "<th>passed, not applied</th><th>runs</th><th>latest run</th></tr></thead><tbody>" + rows +
        "</tbody></table></div>";
    }).join("");
  }

  // ------------------------------------------------------------------ runs and profiles
  function renderRuns() {
    var html = ["<thead><tr><th>run</th><th>build</th><th>started</th><th>result</th><th>pass rate</th>" +
      "<th>kubernetes</th><th>windows builds</th><th>CNI</th><th>runtime</th><th>tests</th>" +
      "<th>Linux controls passed / run</th><th>Windows checks executed on real Windows nodes</th>" +
      "<th>wall time</th><th>pods waited for (Windows)</th>" +
      "<th>waiting for pods</th></tr></thead><tbody>"];
    DATA.runs.forEach(function (run, r) {
      var meta = run.metadata || {};
      html.push('<tr data-run="' + r + '"><td>' + esc(run.label) + "</td><td>" + esc(run.build) + "</td><td>" +
        esc(when(run.started)) + '</td><td class="result-' + esc(run.result) + '">' + esc(run.result) +
        '</td><td class="rate">' + pct(run.rate) + "</td><td>" + esc(run.cluster.k8s) + "</td><td>" +
        esc(run.cluster.windows_build) + "</td><td>" + esc(run.cluster.cni) + "</td><td>" +
        esc((meta["container-runtime"] || "") + " " + (meta["container-runtime-version"] || "")) + "</td><td>" +
        Object.keys(run.counts).reduce(function (n, k) { return n + run.counts[k]; }, 0) + '</td><td class="controls">' +
        (run.controls && run.controls.total ? run.controls.passed + " / " + run.controls.run : "none") + "</td>" +
        executionCell(run.execution) + timingCells(run.timing) + "</tr>");
    });
    html.push("</tbody>");
    var table = document.getElementById("runs");
    table.innerHTML = html.join("");
    table.addEventListener("click", function (event) {
      var tr = event.target.closest("tr[data-run]");
      if (tr) selectRun(+tr.dataset.run);
    });
  }

  // per real Windows node: the Windows checks that executed there and the isolation they observed
  function executionCell(e) {
    if (!e) return '<td class="execution">not recorded</td>';
    var nodes = Object.keys(e.nodes || {}).filter(function (n) { return e.nodes[n].real; });
    var parts = nodes.map(function (n) {
      var node = e.nodes[n], iso = node.isolation || {};
      return esc(n) + ": " + node.executed + " (process " + (iso.process || 0) + ", hyperv " + (iso.hyperv || 0) +
        ", not observed " + (iso["not observed"] || 0) + ")";
    });
    var cls = e.executed_on_real_windows_nodes > 0 ? "execution" : "execution none";
    return '<td class="' + cls + '" title="' + esc(e.summary || "") + '">' +
      (e.executed_on_real_windows_nodes > 0 ? e.executed_on_real_windows_nodes + ": " + parts.join("; ") :
        "none: " + esc(e.summary || "")) + "</td>";
  }

  // wall time, pods and time waiting for pods, as `wincon run` recorded them (none for older runs)
  function timingCells(t) {
    if (!t) return '<td class="timing">not recorded</td><td class="timing"></td><td class="timing"></td>';
    var mins = function (s) { return s >= 60 ? (s / 60).toFixed(1) + " min" : Math.round(s) + " s"; };
    return '<td class="timing">' + mins(t.wall) + '</td><td class="timing">' +
      (t.pods === undefined ? "" : t.pods + " (" + (t.windows_pods || 0) + ")") + '</td><td class="timing">' +
      (t.wait === undefined ? "" : mins(t.wait) + (t.share === undefined ? "" : " (" + pct(t.share) + ")")) + "</td>";
  }

  function selectRun(r) {
    var run = DATA.runs[r];
    document.querySelectorAll("#runs tr.selected").forEach(function (tr) { tr.classList.remove("selected"); });
    var tr = document.querySelector('#runs tr[data-run="' + r + '"]');
    if (tr) tr.classList.add("selected");
    var pre = document.getElementById("profile");
    pre.hidden = false;
    pre.textContent = "run " + run.label + " (" + run.path + ")\n\nmetadata " + JSON.stringify(run.metadata, null, 2) +
      "\n\ncluster profile " + (run.profile && Object.keys(run.profile).length
        ? JSON.stringify(run.profile, null, 2) : "(not recorded)");
  }

  // ------------------------------------------------------------------ views
  function showView(name) {
    document.querySelectorAll(".view").forEach(function (v) { v.hidden = v.id !== "view-" + name; });
    document.querySelectorAll("#tabs button").forEach(function (b) {
      b.classList.toggle("active", b.dataset.view === name);
    });
  }

  function init() {
    if (!DATA) {
      document.querySelector("main").textContent = "data.js is missing or invalid: rebuild with `wincon dashboard`.";
      return;
    }
    renderErrors();
    renderLegend();
    renderGrid();
    renderFilters();
    applyFilters();
    renderAreas();
    renderLimitations();
    renderRuns();
    document.getElementById("tabs").addEventListener("click", function (event) {
      var button = event.target.closest("button[data-view]");
      if (button) showView(button.dataset.view);
    });
    document.getElementById("footer").textContent = "wincon " + DATA.suite_version + "; generated " +
      when(DATA.generated) + "; " + DATA.runs.length + " runs, " + DATA.tests.length + " tests";
    document.body.dataset.ready = "1";
    document.body.dataset.renderMs = String(Math.round(performance.now()));
  }

  init();
})();
