// Renders the report from the JSON in #fib-data: tables with the DOM, plots as inline SVG. Text from the traces
// (names, logs) only ever goes through textContent or attribute values, never through innerHTML.
// Tables, sections and the self-check; the drawing pieces are in draw.js (html.py joins the two).
  // ----------------------------------------------------------------------------------------------------- tables
  function table(parent, columns, rows) {
    var wrap = h("div", { "class": "scroll" }, null, parent);
    var t = h("table", {}, null, wrap);
    var head = h("tr", {}, null, h("thead", {}, null, t));
    columns.forEach(function (c, i) { h("th", i === 0 || c.name ? { "class": "name" } : {}, c.title, head); });
    var body = h("tbody", {}, null, t);
    rows.forEach(function (row) {
      var tr = h("tr", {}, null, body);
      columns.forEach(function (c, i) {
        var cell = row[c.key];
        var attrs = i === 0 || c.name ? { "class": c.wrap ? "name wrap" : "name" } : {};
        if (cell && typeof cell === "object") {
          if (cell.cls) attrs["class"] = (attrs["class"] ? attrs["class"] + " " : "") + cell.cls;
          var td = h("td", attrs, cell.text, tr);
          if (cell.title) td.setAttribute("title", cell.title);
        } else {
          h("td", attrs, cell, tr);
        }
      });
    });
  }
  var STAT_COLUMNS = [
    { key: "evaluations", title: "evaluations" }, { key: "passed", title: "passed" },
    { key: "success", title: "success" }, { key: "mean", title: "mean speed-up" },
    { key: "geomean", title: "geomean speed-up" }, { key: "fast1", title: "fast_1" },
    { key: "fast2", title: "fast_2" }, { key: "win", title: "win rate" }
  ];
  function statCells(st) {
    return { evaluations: String(st.evaluations), passed: String(st.passed), success: pct(st.success_rate),
             mean: times(st.mean_speedup), geomean: times(st.geomean_speedup), fast1: pct(st.fast_1),
             fast2: pct(st.fast_2), win: pct(st.win_rate) };
  }

  // ---------------------------------------------------------------------------------------------------- sections
  function header(data) {
    var head = h("header", {});
    document.body.insertBefore(head, document.body.firstChild);
    h("h1", {}, data.title, head);
    var meta = "results from " + data.source + (data.baseline ? ", compared with " + data.baseline : "") +
      " \u00b7 generated " + data.generated + " by flashinfer-bench " + data.tool_version;
    h("div", { "class": "meta" }, meta, head);
    var counts = h("div", { "class": "counts" }, null, head);
    var c = data.counts;
    [count(c.definitions, "definition"), count(c.solutions, "solution"), count(c.authors, "author"),
     count(c.evaluations, "evaluation"), c.passed + " passed"].forEach(function (t) { h("span", {}, t, counts); });
    if (c.judge_set) {
      h("span", { "class": "judge", title: JUDGE_TEXT }, c.judge_set + " latencies set by the judge's clock " + JUDGE_MARK,
        counts);
    }
  }

  function environmentSection(main, data) {
    var card = h("section", { "class": "card", id: "environment" }, null, main);
    h("h2", {}, "Environment", card);
    if (!data.environments.length) { h("p", { "class": "note" }, "No evaluations.", card); return; }
    h("p", { "class": "note" }, "Where and how the evaluations ran. Timing methods and settings are those recorded " +
      "with the PASSED evaluations' latencies (older traces do not record them).", card);
    table(card, [{ key: "hardware", title: "device" }, { key: "evaluations", title: "evaluations" },
                 { key: "libs", title: "versions", name: true, wrap: true },
                 { key: "methods", title: "timing method", name: true },
                 { key: "settings", title: "settings", name: true, wrap: true }],
      data.environments.map(function (e) {
        return {
          hardware: e.hardware, evaluations: String(e.evaluations),
          libs: Object.keys(e.libs).map(function (k) { return k + " " + e.libs[k]; }).join(", "),
          methods: Object.keys(e.timing_methods).map(function (k) { return k + " (" + e.timing_methods[k] + ")"; }).join(", ") || "-",
          settings: e.settings.map(function (st) {
            return Object.keys(st).map(function (k) { return k + "=" + JSON.stringify(st[k]); }).join(" ");
          }).join("; ") || "not recorded"
        };
      }));
  }

  function authorsSection(main, data) {
    var card = h("section", { "class": "card", id: "authors" }, null, main);
    h("h2", {}, "Authors", card);
    h("p", { "class": "note" }, "fast_p: the share of an author's evaluations that passed and were at least p times " +
      "faster than the reference. win@p: the share of the workloads it was evaluated on where its best correct " +
      "solution was within 1/p of the fastest correct solution of any author (win@1: the fastest).", card);
    table(card, [{ key: "name", title: "author" }].concat(STAT_COLUMNS), data.authors.map(function (a) {
      var row = statCells(a.stats); row.name = a.name; return row;
    }));
    var plots = h("div", { "class": "plots" }, null, card);
    var colored = data.authors.map(function (a, i) { return { name: a.name, color: PALETTE[i % PALETTE.length], a: a }; });
    var withFast = colored.filter(function (c) { return c.a.fast_p.length; });
    if (withFast.length) {
      fastPPlot(plots, "authors:fast_p", "fast_p per author",
                withFast.map(function (c) { return { name: c.name, color: c.color, points: c.a.fast_p }; }));
    }
    var withWin = colored.filter(function (c) { return c.a.win_p.length; });
    if (withWin.length) {
      var g = figure(plots, "authors:win_p", "win@p per author", "p from 0 to 1");
      legend(g, withWin);
      stepPlot(g, withWin.map(function (c) { return { name: c.name, color: c.color, points: c.a.win_p }; }),
               1, "p (fastest latency / own latency)", "workloads");
    }
  }

  function definitionSection(main, def, index) {
    var card = h("section", { "class": "card", id: "def-" + index }, null, main);
    var title = h("h2", {}, def.name, card);
    h("small", {}, (def.op_type ? def.op_type + " \u00b7 " : "") + def.workloads.length + " workloads \u00b7 " +
      def.solutions.length + " solutions", title);
    if (def.label_note) h("p", { "class": "note" }, "Solutions are labelled by what sets them apart: " + def.label_note +
      " (hover a label for the whole name).", card);
    var judgeSet = def.solutions.reduce(function (sum, sol) { return sum + sol.stats.judge_set; }, 0);
    if (judgeSet) h("p", { "class": "note judge" }, count(judgeSet, "evaluation") + " here: " + JUDGE_TEXT +
      ". Drawn hollow in the plots and faded in the status grid.", card);
    var judgeColumn = judgeSet ? [{ key: "judge", title: "judge-set latencies " + JUDGE_MARK }] : [];
    table(card, [{ key: "name", title: "solution" }, { key: "author", title: "author", name: true }]
      .concat(STAT_COLUMNS, judgeColumn),
      def.solutions.map(function (sol) {
        var row = statCells(sol.stats);
        row.name = sol.label === sol.name ? sol.name : { text: sol.label, title: sol.name };
        row.author = sol.author;
        row.judge = sol.stats.judge_set ? { text: String(sol.stats.judge_set), cls: "judge" } : "-";
        return row;
      }));
    var colors = {};
    def.solutions.forEach(function (sol, i) { colors[sol.name] = PALETTE[i % PALETTE.length]; });

    var controls = h("div", { "class": "controls" }, "x axis: ", card);
    var select = h("select", {}, null, controls);
    h("option", { value: "" }, "every workload, in order", select);
    def.var_axes.forEach(function (a) { h("option", { value: a }, a, select); });
    // a single axis that tells every workload apart is drawn to scale; otherwise every workload in order
    var single = def.label_axes.length === 1 ? def.label_axes[0] : null;
    var distinctValues = single !== null &&
      new Set(def.workloads.map(function (w) { return w.axes[single]; })).size === def.workloads.length;
    select.value = distinctValues ? single : "";
    var plots = h("div", { "class": "plots" }, null, card);
    var byAxis = h("div", { style: "display:contents" }, null, plots);
    function drawAxisPlots() {
      byAxis.textContent = "";
      axisPlots(byAxis, def, xLayout(def, select.value), colors);
    }
    select.addEventListener("change", drawAxisPlots);
    drawAxisPlots();

    var status = figure(plots, "status:" + def.name, "status of every evaluation", "rows: solutions; columns: workloads");
    var seen = {};
    def.solutions.forEach(function (sol) { sol.points.forEach(function (p) { seen[p.status] = true; }); });
    legend(status, Object.keys(STATUS_COLORS).filter(function (k) { return seen[k]; })
      .map(function (k) { return { name: k, color: STATUS_COLORS[k] }; }));
    statusGrid(status, def);

    var withFast = def.solutions.filter(function (sol) { return sol.fast_p.length; });
    if (withFast.length) {
      fastPPlot(plots, "fast_p:" + def.name, "fast_p per solution", withFast.map(function (sol) {
        return { name: sol.label, color: colors[sol.name], points: sol.fast_p };
      }));
    }
    if (def.comparison) comparisonBlock(card, def);
  }

  function axisPlots(parent, def, layout, colors) {
    var latency = def.solutions.map(function (sol) {
      return { name: sol.label, color: colors[sol.name], points: sol.points.filter(function (p) { return p.ms !== null; })
        .map(function (p) {
          return { w: p.w, y: p.ms, ci: p.ci, judge: p.judge,
            title: sol.name + " \u00b7 " + axesText(def.workloads[p.w].axes) + "\n" +
            ms(p.ms) + " ms" + interval(p.ci, ms) + (p.method ? " \u00b7 " + p.method : "") +
            (p.judge ? "\n" + JUDGE_TEXT : "") };
        }) };
    }).filter(function (se) { return se.points.length; });
    if (latency.length) {
      var reference = { name: "reference", color: "#444", dashed: true, points: def.reference.map(function (r) {
        return { w: r.w, y: r.ms, ci: r.ci, title: "reference \u00b7 " + axesText(def.workloads[r.w].axes) + "\n" +
          ms(r.ms) + " ms" + interval(r.ci, ms) };
      }) };
      var all = reference.points.length ? latency.concat([reference]) : latency;
      var f = figure(parent, "latency:" + def.name, "latency", "PASSED evaluations, with their 95% intervals where recorded");
      legend(f, all);
      seriesPlot(f, layout, all, "latency (ms, log scale)");
    }
    var speedup = def.solutions.map(function (sol) {
      return { name: sol.label, color: colors[sol.name], points: sol.points.filter(function (p) { return p.sp !== null; })
        .map(function (p) {
          return { w: p.w, y: p.sp, ci: p.sp_ci, judge: p.judge,
            title: sol.name + " \u00b7 " + axesText(def.workloads[p.w].axes) + "\n" +
            times(p.sp) + interval(p.sp_ci, times) + (p.judge ? "\n" + JUDGE_TEXT : "") };
        }) };
    }).filter(function (se) { return se.points.length; });
    if (speedup.length) {
      var g = figure(parent, "speedup:" + def.name, "speed-up over the reference", "dashed: 1\u00d7");
      legend(g, speedup);
      seriesPlot(g, layout, speedup, "speed-up (log scale)", 1);
    }
    var cmp = def.comparison;
    var timed = cmp ? cmp.matches.filter(function (m) { return m.ratio !== null; }) : [];
    if (timed.length) {
      var c = figure(parent, "compare:" + def.name, "candidate / baseline latency",
                     "bars: the noise band; a bar across the dashed line is SAME");
      legend(c, ["FASTER", "SAME", "SLOWER"].map(function (v) { return { name: v, color: VERDICT_COLORS[v] }; }));
      var bySolution = {};
      timed.forEach(function (m) {
        (bySolution[m.solution] = bySolution[m.solution] || []).push({
          w: m.w, y: m.ratio,
          ci: [m.band[1] === null ? null : m.ratio / m.band[1], m.band[0] === 0 ? null : m.ratio / m.band[0]],
          color: VERDICT_COLORS[m.verdict],
          title: m.solution + " \u00b7 " + axesText(def.workloads[m.w].axes) + "\n" + ms(m.base_ms) + " \u2192 " +
            ms(m.cand_ms) + " ms (" + times(m.ratio) + ", same within " + bandText(m.band) +
            (m.assumed ? " assumed" : "") + (m.judge_bounded ? ", a latency set by the judge's clock" : "") + "): " +
            m.verdict
        });
      });
      seriesPlot(c, layout, Object.keys(bySolution).map(function (name) {
        return { name: name, color: "#b0b8c1", points: bySolution[name] };
      }), "ratio (log scale)", 1);
    }
  }

  function comparisonBlock(card, def) {
    var cmp = def.comparison;
    var v = cmp.verdicts;
    h("p", { "class": "note" }, "Against the baseline: geometric-mean ratio " + times(cmp.geomean_ratio) + " over " +
      cmp.matches.filter(function (m) { return m.ratio !== null; }).length + " evaluations that passed in both runs (" +
      (v.FASTER || 0) + " faster, " + (v.SAME || 0) + " same, " + (v.SLOWER || 0) + " slower); " +
      cmp.status_changes + " status changes.", card);
    table(card, [{ key: "solution", title: "solution" }, { key: "workload", title: "workload", name: true },
                 { key: "base", title: "baseline ms" }, { key: "cand", title: "candidate ms" },
                 { key: "ratio", title: "ratio" }, { key: "noise", title: "same within" }, { key: "verdict", title: "verdict" }],
      cmp.matches.map(function (m) {
        var verdict = m.verdict ? { text: m.verdict, cls: "verdict-" + m.verdict }
          : { text: m.base_status === m.cand_status ? m.cand_status : m.base_status + " \u2192 " + m.cand_status,
              cls: m.base_status === "PASSED" && m.cand_status !== "PASSED" ? "bad"
                : m.cand_status === "PASSED" && m.base_status !== "PASSED" ? "good" : "" };
        return {
          solution: m.solution, workload: axesText(def.workloads[m.w].axes), base: ms(m.base_ms), cand: ms(m.cand_ms),
          ratio: times(m.ratio),
          noise: m.band === null ? "-" : {
            text: bandText(m.band) + (m.assumed ? "*" : "") + (m.judge_bounded ? "\u2020" : ""),
            cls: m.assumed || m.judge_bounded ? "assumed" : "",
            title: [m.assumed ? "a side recorded no spread: its noise is assumed" : "",
                    m.judge_bounded ? "a side's latency was set by the judge's clock (its timing claim was not " +
                      "believed): no change is called" : ""].filter(Boolean).join("; ") },
          verdict: verdict
        };
      }));
  }

  function comparisonSummary(main, data) {
    var cmp = data.comparison;
    var card = h("section", { "class": "card", id: "comparison" }, null, main);
    h("h2", {}, "Compared with the baseline", card);
    h("p", { "class": "note" }, "Evaluations matched by (definition, solution, workload): " + cmp.matched + " (" +
      cmp.only_base + " only in the baseline, " + cmp.only_candidate + " only in the candidate). A change is called " +
      "FASTER or SLOWER only beyond both runs' noise and their drift (\u00b1" + pct(cmp.drift) +
      " for one evaluation, measured over the evaluations timed in both) combined, at " + cmp.z.toFixed(2) +
      " standard deviations, so that all of them together are called wrongly with a chance of at most " +
      pct(cmp.false_call_rate) + " (and by at least " + pct(cmp.min_change) + ")." +
      (cmp.assumed ? " " + cmp.assumed + " of them had a side without a recorded spread: its noise is assumed to be " +
        pct(cmp.default_noise) + " (marked *)." : "") +
      (cmp.judge_bounded ? " " + cmp.judge_bounded + " of them had a side whose latency the judge's clock set (its " +
        "timing claim was not believed): a bound that moves with the host's speed, so no change is called and it " +
        "takes no part in the drift (marked \u2020)." : ""), card);
    table(card, [{ key: "definition", title: "definition" }, { key: "geomean", title: "geomean ratio" },
                 { key: "faster", title: "faster" }, { key: "same", title: "same" }, { key: "slower", title: "slower" },
                 { key: "changes", title: "status changes" }],
      data.definitions.filter(function (d) { return d.comparison; }).map(function (d) {
        var c = d.comparison, v = c.verdicts;
        return { definition: d.name, geomean: times(c.geomean_ratio), faster: String(v.FASTER || 0),
                 same: String(v.SAME || 0), slower: String(v.SLOWER || 0), changes: String(c.status_changes) };
      }));
  }

  // ---------------------------------------------------------------------------------------------------- checking
  // What the reader cannot see whole at this window's size: text outside its drawing, and tables wider than their
  // card (which then scroll sideways). The browser tests require none at the screenshot's width.
  function clipped() {
    var found = [];
    document.querySelectorAll("svg").forEach(function (svg) {
      var box = svg.getBoundingClientRect();  // on screen, so that rotated text is measured as drawn
      svg.querySelectorAll("text").forEach(function (t) {
        var b = t.getBoundingClientRect();
        if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1) {
          var shown = Array.prototype.filter.call(t.childNodes, function (n) { return n.nodeType === 3; })
            .map(function (n) { return n.nodeValue; }).join("");  // without its hover title
          found.push("text '" + shown + "'");
        }
      });
    });
    document.querySelectorAll(".scroll").forEach(function (wrap) {
      if (wrap.scrollWidth > wrap.clientWidth + 1) {
        var section = wrap.closest("section");
        found.push("a table of " + (section ? section.id : "the page") + " (" + wrap.scrollWidth + " px in " +
                   wrap.clientWidth + " px)");
      }
    });
    return found;
  }

  function selfCheck() {
    var figures = document.querySelectorAll("figure[data-plot]");
    var empty = [];
    figures.forEach(function (f) { if (!f.querySelector("svg .mark")) empty.push(f.getAttribute("data-plot")); });
    var check = document.getElementById("fib-selfcheck");
    check.setAttribute("data-plots", String(figures.length));
    check.setAttribute("data-clipped", clipped().join(" | "));
    if (empty.length) window.fibReportError("plots without data: " + empty.join(", "));
    if (!window.fibErrors.length) check.setAttribute("data-status", "ok");
  }

  try {
    var data = JSON.parse(document.getElementById("fib-data").textContent);
    document.title = data.title;
    header(data);
    var main = document.getElementById("report");
    var nav = h("nav", {}, "definitions: ", main);
    data.definitions.forEach(function (d, i) { h("a", { href: "#def-" + i }, d.name, nav); });
    if (!data.definitions.length) h("p", { "class": "note" }, "No result traces: nothing to show.", main);
    environmentSection(main, data);
    if (data.comparison) comparisonSummary(main, data);
    if (data.authors.length) authorsSection(main, data);
    data.definitions.forEach(function (d, i) { definitionSection(main, d, i); });
    selfCheck();
  } catch (err) {
    window.fibReportError(err && err.stack ? err.stack : String(err));
  }
