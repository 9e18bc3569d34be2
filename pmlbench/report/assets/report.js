/* pmlbench report page: builds every table from the JSON embedded once in the page.
   Plain ES5-level JavaScript, no dependencies, nothing fetched. */
(function () {
  "use strict";

  var D;
  var S = { metric: "", dataset: "", level: "", method: "", status: "", view: "mean", sort: {} };
  var ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  var DASH = '<span class="dash">–</span>';
  var NA = '<span class="dash na" title="the method declined this dataset up front">n/a</span>';

  function esc(value) {
    return String(value).replace(/[&<>"']/g, function (c) { return ESC[c]; });
  }

  function $(id) { return document.getElementById(id); }

  function fmtRank(r) { return String(Math.round(r * 100) / 100); }

  function isMissing(v) { return v === null || v === undefined || v !== v; }

  /* A sortable table. spec: {id, cols: [{label, num, key(row), html(row), title}], rows,
     foot (html of <tr> elements), cls}. Clicking a header sorts by that column's key
     (missing values last); clicking it again reverses the order. */
  function table(spec) {
    var st = S.sort[spec.id];
    var rows = spec.rows;
    if (st && spec.cols[st.col]) {
      var key = spec.cols[st.col].key;
      var dir = st.dir;
      var keyed = rows.map(function (r, i) { return [key(r), i, r]; });
      keyed.sort(function (a, b) {
        var am = isMissing(a[0]), bm = isMissing(b[0]);
        if (am || bm) { return am === bm ? a[1] - b[1] : (am ? 1 : -1); }
        if (a[0] < b[0]) { return -dir; }
        if (a[0] > b[0]) { return dir; }
        return a[1] - b[1];
      });
      rows = keyed.map(function (t) { return t[2]; });
    }
    var h = ['<div class="scroll"><table class="data ', spec.cls || "", '" id="', esc(spec.id),
      '"><thead><tr>'];
    spec.cols.forEach(function (c, i) {
      var sorted = st && st.col === i;
      h.push('<th class="sortable', c.num ? " num" : "", '" data-t="', esc(spec.id),
        '" data-c="', i, '"', sorted ? ' aria-sort="' + (st.dir === 1 ? "ascending" : "descending") + '"' : "",
        c.title ? ' title="' + esc(c.title) + '"' : "",
        '><button type="button">', esc(c.label), '<span class="ind">',
        sorted ? (st.dir === 1 ? "▲" : "▼") : "", "</span></button></th>");
    });
    h.push("</tr></thead><tbody>");
    rows.forEach(function (r) {
      h.push("<tr>");
      spec.cols.forEach(function (c) { h.push(c.html(r)); });
      h.push("</tr>");
    });
    h.push("</tbody>");
    if (spec.foot) { h.push("<tfoot>", spec.foot, "</tfoot>"); }
    h.push("</table></div>");
    return h.join("");
  }

  function td(text, cls) {
    return '<td' + (cls ? ' class="' + cls + '"' : "") + ">" + text + "</td>";
  }

  function visibleMetrics() {
    var out = [];
    D.metrics.forEach(function (m, i) { if (S.metric === "" || S.metric === String(i)) { out.push(i); } });
    return out;
  }

  function visibleMethods(candidates) {
    if (S.method === "") { return candidates; }
    var k = Number(S.method);
    return candidates.indexOf(k) >= 0 ? [k] : candidates;
  }

  function blockVisible(b) {
    var blk = D.blocks[b];
    return (S.dataset === "" || S.dataset === String(blk[0])) &&
      (S.level === "" || S.level === String(blk[1]));
  }

  /* ---- Table 2: per metric, PML datasets by method ---- */
  var T2 = [];      // per metric: list of {b, cells: [cell or undefined per method]}
  var OUTCOME = {}; // "m,b,k" -> 1 (reference significantly better), -1 (worse), 0 (tie)
  var DECLINED = {}; // "b,k" -> true: method k declined block b up front (n/a)

  function indexTable2() {
    var byMetric = D.metrics.map(function () { return {}; });
    D.t2.forEach(function (c) {
      var rows = byMetric[c[0]];
      var row = rows[c[1]] || (rows[c[1]] = { b: c[1], cells: [] });
      row.cells[c[2]] = { mean: c[3], std: c[4], best: c[5] === 1, raw: c[6], rank: c[7] };
    });
    T2 = byMetric.map(function (rows) {
      return Object.keys(rows).map(Number).sort(function (a, b) { return a - b; })
        .map(function (b) { return rows[b]; });
    });
    D.cmp.forEach(function (c) { OUTCOME[c[1] + "," + c[2] + "," + c[0]] = c[3]; });
    (D.na || []).forEach(function (c) { DECLINED[c[0] + "," + c[1]] = true; });
  }

  function marker(m, b, k) {
    var o = OUTCOME[m + "," + b + "," + k];
    if (o === 1) { return '<span class="mk w" title="' + esc(D.reference) + ' significantly better">•</span>'; }
    if (o === -1) { return '<span class="mk l" title="' + esc(D.reference) + ' significantly worse">◦</span>'; }
    return D.reference !== null ? '<span class="mk"></span>' : "";
  }

  function renderTable2() {
    var methods = visibleMethods(D.methods.map(function (_, k) { return k; }));
    var parts = [];
    var shown = 0;
    visibleMetrics().forEach(function (m) {
      var metric = D.metrics[m];
      var higher = metric[2];
      var rows = T2[m].filter(function (r) { return blockVisible(r.b); });
      if (!rows.length) { return; }
      shown += 1;
      var rankView = S.view === "rank";
      var cols = [
        { label: "dataset", key: function (r) { return r.b; },
          html: function (r) { return td(esc(D.datasets[D.blocks[r.b][0]]), "key"); } },
        { label: "noise", key: function (r) { return D.blocks[r.b][1] * 1e6 + r.b; },
          html: function (r) { return td(esc(D.levels[D.blocks[r.b][1]]), "lvl"); } }
      ];
      methods.forEach(function (k) {
        cols.push({
          label: D.methods[k], num: true,
          title: rankView ? "sort by rank (best first)" : "sort by mean (best first)",
          key: function (r) {
            var c = r.cells[k];
            if (!c) { return null; }
            return rankView ? c.rank : (higher ? -c.raw : c.raw);
          },
          html: function (r) {
            var c = r.cells[k];
            if (!c) { return td(DECLINED[r.b + "," + k] ? NA : DASH, "num cell"); }
            var best = rankView ? c.rank === minRank(r) : c.best;
            var text = rankView ? fmtRank(c.rank) : c.mean + " ± " + c.std;
            var v = '<span class="v">' + (best ? "<b>" + text + "</b>" : text) + "</span>";
            var cls = "num cell" + (best ? " best" : "");
            if (rankView) { return tintedTd(v + marker(m, r.b, k), cls, c.rank, r.cells); }
            return td(v + marker(m, r.b, k), cls);
          }
        });
      });
      // the report's one average rank (the Friedman test's, D.ranks; the ranks section
      // states its definition), not a mean over the rows shown
      var ranked = D.ranks.filter(function (r) { return r[0] === m; })[0];
      var foot = [];
      if (ranked) {
        foot.push('<tr><td colspan="2" title="as the ranks section defines it">average rank over ',
          ranked[2], " ", esc(D.rankUnit), "</td>");
        var avgs = methods.map(function (k) { return isMissing(ranked[1][k]) ? null : ranked[1][k]; });
        var bestAvg = Math.min.apply(null, avgs.filter(function (a) { return a !== null; }));
        avgs.forEach(function (a) {
          var text = a === null ? "–" : a.toFixed(2);
          foot.push(td(a !== null && a === bestAvg ? "<b>" + text + "</b>" : text, "num"));
        });
        foot.push("</tr>");
      }
      parts.push('<div class="block" data-metric="', esc(metric[0]), '"><div class="block-head"><h3>',
        esc(metric[1]), '</h3><span class="pill ', higher ? "up" : "down", '">',
        higher ? "↑ higher is better" : "↓ lower is better", "</span></div>",
        table({ id: "t2-" + metric[0], cols: cols, rows: rows, foot: foot.join(""), cls: "t2" }),
        "</div>");
    });
    var legend = ['<p class="legend">', S.view === "rank"
      ? "Rank of each method's mean within the row (1 = best, ties share the average rank); bold: best rank."
      : "Mean ± standard deviation over splits; bold: best mean of the row in the metric's direction (judged on the rounded means, as in table2.md)."];
    if (D.reference !== null) {
      legend.push(' <span class="mk w">•</span> ', esc(D.reference),
        ' significantly better than that method on that row, <span class="mk l">◦</span> significantly worse (',
        esc(D.wtl ? D.wtl.test : ""), ").");
    }
    if ((D.na || []).length) {
      legend.push(" n/a: the method declined this dataset up front (units that did not finish, below); –: no result.");
    }
    legend.push("</p>");
    $("table2").innerHTML = shown ? parts.join("") + legend.join("")
      : '<p class="empty">No results for this selection.</p>';
  }

  /* rank view: a green tint that fades from the best rank of the row to the worst */
  function tintedTd(html, cls, rank, cells) {
    var n = cells.filter(function (c) { return c; }).length;
    var strength = n > 1 ? (n - rank) / (n - 1) : 0;
    var style = ' style="background:rgba(26,127,67,' + (0.04 + 0.2 * strength).toFixed(3) + ')"';
    return '<td class="' + cls + '"' + style + ">" + html + "</td>";
  }

  function minRank(r) {
    var best = Infinity;
    r.cells.forEach(function (c) { if (c && c.rank < best) { best = c.rank; } });
    return best;
  }

  /* ---- win/tie/loss ---- */
  function wtlCell(c) {
    if (!c) { return td(DASH, "num"); }
    var n = c[0] + c[1] + c[2];
    var bar = n ? '<span class="stack" aria-hidden="true"><i class="w" style="width:' + (100 * c[0] / n) +
      '%"></i><i class="t" style="width:' + (100 * c[1] / n) + '%"></i><i class="l" style="width:' +
      (100 * c[2] / n) + '%"></i></span>' : "";
    return td('<span class="v">' + c[0] + "/" + c[1] + "/" + c[2] + "</span>" + bar, "num");
  }

  function renderWtl() {
    var box = $("wtl");
    if (!box) { return; }
    if (!D.wtl) {
      box.innerHTML = '<p class="empty">No reference method was given: pass --reference METHOD ' +
        "to count wins, ties and losses.</p>";
      return;
    }
    var baselines = visibleMethods(D.wtl.baselines);
    var filtered = S.dataset !== "" || S.level !== "";
    var counts = {};  // "k,m" -> [w, t, l]; m = -1 for the total
    if (filtered) {
      D.cmp.forEach(function (c) {
        if (!blockVisible(c[2])) { return; }
        var key = c[0] + "," + c[1];
        var cell = counts[key] || (counts[key] = [0, 0, 0]);
        cell[c[3] === 1 ? 0 : c[3] === 0 ? 1 : 2] += 1;
      });
    } else {
      D.wtl.rows.forEach(function (r) { counts[r[0] + "," + r[1]] = [r[2], r[3], r[4]]; });
    }
    var metrics = visibleMetrics();
    var rows = metrics.map(function (m) { return { m: m }; });
    var cols = [{ label: D.reference + " vs", key: function (r) { return r.m; },
      html: function (r) { return td(esc(D.metrics[r.m][1]), "key"); } }];
    baselines.forEach(function (k) {
      cols.push({
        label: D.methods[k], num: true, title: "sort by wins minus losses",
        key: function (r) { var c = counts[k + "," + r.m]; return c ? c[2] - c[0] : null; },
        html: function (r) { return wtlCell(counts[k + "," + r.m]); }
      });
    });
    var foot = ["<tr>", td("total")];
    baselines.forEach(function (k) {
      var total;
      if (!filtered && S.metric === "") {
        total = counts[k + ",-1"];
      } else {
        total = [0, 0, 0];
        metrics.forEach(function (m) {
          var c = counts[k + "," + m];
          if (c) { total[0] += c[0]; total[1] += c[1]; total[2] += c[2]; }
        });
      }
      foot.push(wtlCell(total));
    });
    foot.push("</tr>");
    box.innerHTML = table({ id: "wtl-table", cols: cols, rows: rows, foot: foot.join(""), cls: "wtl" }) +
      '<p class="legend">win/tie/loss of ' + esc(D.reference) + " per PML dataset: " + esc(D.wtl.test) +
      (filtered ? ". <b>Recounted for the selected datasets and noise levels.</b>" : ".") + "</p>";
  }

  /* ---- per-dataset comparisons: wtl.md's effect sizes, bayes.md's probabilities ---- */
  function comparisonTable(id, header, rows, extra) {
    var cols = [
      { label: "metric", key: function (r) { return r[1]; },
        html: function (r) { return td(esc(D.metrics[r[1]][1]), "key"); } },
      { label: "dataset", key: function (r) { return r[2]; },
        html: function (r) { return td(esc(D.datasets[D.blocks[r[2]][0]])); } },
      { label: "noise", key: function (r) { return D.blocks[r[2]][1] * 1e6 + r[2]; },
        html: function (r) { return td(esc(D.levels[D.blocks[r[2]][1]]), "lvl"); } },
      { label: "vs", key: function (r) { return r[0]; },
        html: function (r) { return td(esc(D.methods[r[0]])); } }
    ];
    header.forEach(function (label, i) {
      var last = i === header.length - 1;
      cols.push({
        label: label, num: !last,
        key: function (r) { return i < r[4].length ? r[4][i] : r[3][i]; },
        html: function (r) {
          var text = r[3][i];
          return td(text === "–" ? DASH : esc(text), last ? "oc oc-" + esc(text) : "num");
        }
      });
    });
    var metrics = visibleMetrics();
    var methods = visibleMethods(D.methods.map(function (_, k) { return k; }));
    var shown = rows.filter(function (r) {
      return metrics.indexOf(r[1]) >= 0 && methods.indexOf(r[0]) >= 0 && blockVisible(r[2]);
    });
    return shown.length ? table({ id: id, cols: cols, rows: shown, cls: extra || "" })
      : '<p class="empty">No comparisons for this selection.</p>';
  }

  function renderEffects() {
    var box = $("wtl-cmp");
    if (!box || !D.eff) { return; }
    var rows = D.eff.rows.map(function (r) { return [r[0], r[1], r[2], r[3], r[4]]; });
    box.innerHTML = comparisonTable("wtl-cmp-table", D.eff.header, rows, "cmp") +
      '<p class="legend">difference: mean of ' + esc(D.reference) + " − the other method over " +
      "matched splits, on the metric's scale, ± its standard error (the test's denominator); " +
      "Cohen's d: mean difference / standard deviation of the differences.</p>";
  }

  /* ---- Bayesian comparison ---- */
  function bayesCell(c) {
    if (!c) { return td(DASH, "num"); }
    var n = c[0] + c[1] + c[2] + c[3];
    var bar = n ? '<span class="stack" aria-hidden="true">' + ["w", "t", "l", "u"].map(function (k, i) {
      return '<i class="' + k + '" style="width:' + (100 * c[i] / n) + '%"></i>';
    }).join("") + "</span>" : "";
    return td('<span class="v">' + c.join("/") + "</span>" + bar, "num");
  }

  function renderBayes() {
    var B = D.bayes;
    if (!B || !$("bayes-wtl")) { return; }
    var baselines = visibleMethods(B.baselines);
    var filtered = S.dataset !== "" || S.level !== "";
    var counts = {};  // "k,m" -> [win, tie, loss, undecided]; m = -1 for the total
    if (filtered) {
      B.cmp.forEach(function (c) {
        if (!blockVisible(c[2]) || c[5] < 0) { return; }
        var key = c[0] + "," + c[1];
        (counts[key] || (counts[key] = [0, 0, 0, 0]))[c[5]] += 1;
      });
    } else {
      B.wtl.forEach(function (r) { counts[r[0] + "," + r[1]] = r.slice(2); });
    }
    var metrics = visibleMetrics();
    var cols = [{ label: D.reference + " vs", key: function (r) { return r.m; },
      html: function (r) { return td(esc(D.metrics[r.m][1]), "key"); } }];
    baselines.forEach(function (k) {
      cols.push({
        label: D.methods[k], num: true, title: "sort by wins minus losses",
        key: function (r) { var c = counts[k + "," + r.m]; return c ? c[2] - c[0] : null; },
        html: function (r) { return bayesCell(counts[k + "," + r.m]); }
      });
    });
    var foot = ["<tr>", td("total")];
    baselines.forEach(function (k) {
      var total;
      if (!filtered && S.metric === "") {
        total = counts[k + ",-1"];
      } else {
        total = [0, 0, 0, 0];
        metrics.forEach(function (m) {
          var c = counts[k + "," + m];
          if (c) { for (var i = 0; i < 4; i++) { total[i] += c[i]; } }
        });
      }
      foot.push(bayesCell(total));
    });
    foot.push("</tr>");
    $("bayes-wtl").innerHTML = table({ id: "bayes-wtl-table", cols: cols,
      rows: metrics.map(function (m) { return { m: m }; }), foot: foot.join(""), cls: "wtl" }) +
      '<p class="legend">win/tie/loss/undecided of ' + esc(D.reference) + " per PML dataset: " +
      esc(B.test) + (filtered ? ". <b>Recounted for the selected datasets and noise levels.</b>" : ".") +
      ' <span class="key-u"></span> undecided: no conclusion reaches that probability.</p>';
    var methods = visibleMethods(D.methods.map(function (_, k) { return k; }));
    var across = B.across.filter(function (r) {
      return metrics.indexOf(r[1]) >= 0 && methods.indexOf(r[0]) >= 0;
    });
    var acrossCols = [
      { label: "vs", key: function (r) { return r[0]; }, html: function (r) { return td(esc(D.methods[r[0]]), "key"); } },
      { label: "metric", key: function (r) { return r[1]; }, html: function (r) { return td(esc(D.metrics[r[1]][1])); } }
    ];
    B.acrossHeader.forEach(function (label, i) {
      var last = i === B.acrossHeader.length - 1;
      acrossCols.push({ label: label, num: !last,
        key: function (r) { return i < r[3].length ? r[3][i] : r[2][i]; },
        html: function (r) { return td(esc(r[2][i]), last ? "oc oc-" + esc(r[2][i]) : "num"); } });
    });
    $("bayes-across").innerHTML = across.length
      ? table({ id: "bayes-across-table", cols: acrossCols, rows: across, cls: "cmp" }) +
        '<p class="legend">On the per-dataset means (all PML datasets, whatever the dataset and noise filters).</p>'
      : '<p class="empty">No signed-rank test for this selection.</p>';
    $("bayes-cmp").innerHTML = comparisonTable("bayes-cmp-table", B.cmpHeader, B.cmp, "cmp");
  }

  /* ---- average ranks across PML datasets (Friedman) ---- */
  function renderRanks() {
    var box = $("ranks");
    if (!box) { return; }
    if (!D.ranks.length) {
      box.innerHTML = '<p class="empty">No Friedman test: it needs at least two methods on two PML datasets.</p>';
      return;
    }
    var methods = visibleMethods(D.methods.map(function (_, k) { return k; }));
    var wanted = visibleMetrics();
    var rows = D.ranks.filter(function (r) { return wanted.indexOf(r[0]) >= 0; });
    var cols = [{ label: "metric", key: function (r) { return r[0]; },
      html: function (r) { return td(esc(D.metrics[r[0]][1]), "key"); } }];
    methods.forEach(function (k) {
      cols.push({
        label: D.methods[k], num: true, key: function (r) { return r[1][k]; },
        html: function (r) {
          var a = r[1][k];
          if (isMissing(a)) { return td(DASH, "num"); }
          var best = Math.min.apply(null, r[1].filter(function (x) { return !isMissing(x); }));
          return td(a === best ? "<b>" + a.toFixed(2) + "</b>" : a.toFixed(2), "num");
        }
      });
    });
    cols.push({ label: "N", num: true, title: "PML datasets in the test", key: function (r) { return r[2]; },
      html: function (r) { return td(String(r[2]), "num"); } });
    cols.push({ label: "Friedman p", num: true, title: "p-value of Iman and Davenport's F_F",
      key: function (r) { return r[4]; },
      html: function (r) { return td(esc(r[3]), "num"); } });
    // the Nemenyi CD only where it decides the diagrams' bars (--posthoc nemenyi)
    if (rows.some(function (r) { return r[5] !== null; })) {
      cols.push({ label: "CD", num: true, title: "Nemenyi critical difference of average ranks",
        key: function (r) { return r[5]; },
        html: function (r) { return td(esc(r[5] === null ? "–" : r[5].toFixed(3)), "num"); } });
    }
    box.innerHTML = rows.length ? table({ id: "ranks-table", cols: cols, rows: rows })
      : '<p class="empty">No results for this selection.</p>';
  }

  /* ---- units that did not finish ---- */
  function renderUnits() {
    var box = $("units");
    if (!box) { return; }
    var rows = D.units.filter(function (u) { return S.status === "" || u[0] === S.status; });
    var cols = [
      { label: "status", key: function (u) { return u[0]; },
        html: function (u) { return td('<span class="badge ' + esc(u[0]) + '">' + esc(u[0]) + "</span>"); } },
      { label: "unit", key: function (u) { return u[1]; }, html: function (u) { return td(esc(u[1]), "wrap"); } },
      { label: "error", key: function (u) { return u[2]; },
        html: function (u) { return td('<span class="err">' + esc(u[2]) + "</span>", "wrap"); } },
      { label: "where", key: function (u) { return u[3]; },
        html: function (u) { return td('<span class="err">' + esc(u[3]) + "</span>", "wrap"); } }
    ];
    box.innerHTML = D.units.length ? table({ id: "units-table", cols: cols, rows: rows }) : "";
  }

  /* ---- provenance tables ---- */
  function renderProvenance() {
    var P = D.prov;
    var box = $("prov-tables");
    if (!box) { return; }
    var parts = [];
    if (P.commands.length) {
      parts.push("<h3>Command lines of the runs</h3>", table({
        id: "prov-commands",
        cols: [
          { label: "command", key: function (r) { return r[0]; },
            html: function (r) { return td('<pre class="cmd">' + esc(r[0]) + "</pre>", "wrap"); } },
          { label: "records", num: true, key: function (r) { return r[1]; },
            html: function (r) { return td(String(r[1]), "num"); } }
        ],
        rows: P.commands
      }));
    }
    if (P.versions.length) {
      parts.push('<h3 style="margin-top:16px">Package versions of the runs</h3>', table({
        id: "prov-versions",
        cols: [
          { label: "package", key: function (r) { return r[0]; }, html: function (r) { return td(esc(r[0]), "key"); } },
          { label: "version (results)", key: function (r) { return r[1]; },
            html: function (r) { return td(esc(r[1]), "mono wrap"); } },
          { label: "report", key: function (r) { return r[2]; }, html: function (r) { return td(esc(r[2]), "mono"); } }
        ],
        rows: P.versions
      }));
    }
    if (P.commits.length) {
      parts.push('<h3 style="margin-top:16px">git commits of the runs</h3>', table({
        id: "prov-commits",
        cols: [
          { label: "commit", key: function (r) { return r[0]; }, html: function (r) { return td(esc(r[0]), "mono"); } },
          { label: "records", num: true, key: function (r) { return r[1]; },
            html: function (r) { return td(String(r[1]), "num"); } }
        ],
        rows: P.commits
      }));
    }
    box.innerHTML = parts.length ? parts.join("")
      : '<p class="empty">The inputs carry no run records (run.json or store records).</p>';
  }

  /* ---- figures: shown per metric ---- */
  function filterFigures() {
    var want = S.metric === "" ? "" : D.metrics[Number(S.metric)][0];
    var figs = document.querySelectorAll("figure[data-metric]");
    for (var i = 0; i < figs.length; i++) {
      var f = figs[i];
      f.classList.toggle("hidden", want !== "" && f.getAttribute("data-metric") !== want);
    }
    var groups = document.querySelectorAll(".fig-group");
    for (var j = 0; j < groups.length; j++) {
      groups[j].classList.toggle("hidden", !groups[j].querySelector("figure:not(.hidden)"));
    }
  }

  /* ---- controls ---- */
  function fillSelect(id, labels, all) {
    var sel = $(id);
    if (!sel) { return; }
    var h = ['<option value="">' + esc(all) + "</option>"];
    labels.forEach(function (label, i) { h.push('<option value="' + i + '">' + esc(label) + "</option>"); });
    sel.innerHTML = h.join("");
  }

  function render() {
    renderTable2();
    renderWtl();
    renderEffects();
    renderBayes();
    renderRanks();
    renderUnits();
    renderProvenance();
    filterFigures();
    ["metric", "dataset", "level", "method", "status"].forEach(function (key) {
      var sel = $("f-" + key);
      if (sel) { sel.value = S[key]; sel.classList.toggle("on", S[key] !== ""); }
    });
    ["mean", "rank"].forEach(function (v) {
      $("v-" + v).setAttribute("aria-pressed", String(S.view === v));
    });
  }

  function init() {
    var t0 = performance.now();
    D = JSON.parse($("report-data").textContent);
    indexTable2();
    fillSelect("f-metric", D.metrics.map(function (m) { return m[1]; }), "all metrics");
    fillSelect("f-dataset", D.datasets, "all datasets");
    fillSelect("f-level", D.levels, "all noise levels");
    fillSelect("f-method", D.methods, "all methods");
    var statuses = [];
    D.units.forEach(function (u) { if (statuses.indexOf(u[0]) < 0) { statuses.push(u[0]); } });
    var st = $("f-status");
    if (st) {
      st.innerHTML = '<option value="">all statuses</option>' + statuses.map(function (s) {
        return '<option value="' + esc(s) + '">' + esc(s) + "</option>";
      }).join("");
    }
    document.addEventListener("change", function (e) {
      var key = e.target.getAttribute && e.target.getAttribute("data-key");
      if (key) { S[key] = e.target.value; render(); }
    });
    document.addEventListener("click", function (e) {
      var th = e.target.closest && e.target.closest("th[data-c]");
      if (th) {
        var id = th.getAttribute("data-t");
        var col = Number(th.getAttribute("data-c"));
        var old = S.sort[id];
        S.sort[id] = { col: col, dir: old && old.col === col ? -old.dir : 1 };
        render();
        return;
      }
      var img = e.target.closest && e.target.closest("figure img");
      if (img) { img.parentNode.classList.toggle("zoom"); return; }
      var view = e.target.closest && e.target.closest("button[data-view]");
      if (view) { S.view = view.getAttribute("data-view"); render(); return; }
      if (e.target.id === "f-reset") {
        S = { metric: "", dataset: "", level: "", method: "", status: "", view: S.view, sort: {} };
        render();
      }
    });
    render();
    var t1 = performance.now();
    window.pmlbenchReport = { started: t0, built: t1, buildMs: t1 - t0 };
    document.documentElement.setAttribute("data-ready", "true");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
