// The report's drawing pieces: constants, DOM and SVG helpers, number formats, scales and plots (inline SVG).
// Declarations only (constants and functions): html.py puts this file and report.js in one function scope.
  var SVG_NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#2f6db3", "#e07b22", "#2c9f5a", "#c2423b", "#7d5ab5", "#8c5a44", "#d46aa8", "#6f7a86",
                 "#a8a23a", "#1fa4b5"];
  var STATUS_COLORS = {
    PASSED: "#2c9f5a", INCORRECT_NUMERICAL: "#f0a030", INCORRECT_SHAPE: "#e0702a", INCORRECT_DTYPE: "#c9561f",
    RUNTIME_ERROR: "#c2423b", COMPILE_ERROR: "#7d5ab5", TIMEOUT: "#6f7a86"
  };
  var VERDICT_COLORS = { FASTER: "#1a9850", SLOWER: "#d73027", SAME: "#8c96a0" };
  var W = 640, H = 300, M = { left: 64, right: 16, top: 12, bottom: 46 };
  var JUDGE_MARK = "\u2020";
  var JUDGE_TEXT = JUDGE_MARK + " latency set by the judge's clock: the solution's own timing was not believed " +
    "(its log says why); a bound that moves with the host's speed, not a measurement";

  // ------------------------------------------------------------------------------------------------ DOM helpers
  function h(tag, attrs, text, parent) {
    var node = document.createElement(tag);
    for (var key in attrs || {}) node.setAttribute(key, attrs[key]);
    if (text !== undefined && text !== null) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function s(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    for (var key in attrs || {}) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function titled(node, text) { s("title", {}, node).textContent = text; return node; }

  // ------------------------------------------------------------------------------------------------ formatting
  function num(v) {
    if (v === null || v === undefined) return "-";
    if (Math.abs(v) >= 1000) return v.toFixed(0);
    return String(parseFloat(v.toPrecision(3)));
  }
  function ms(v) { return v === null || v === undefined ? "-" : String(parseFloat(v.toPrecision(4))); }
  function times(v) { return v === null || v === undefined ? "-" : v.toFixed(2) + "\u00d7"; }
  function pct(v) { return v === null || v === undefined ? "-" : (100 * v).toFixed(0) + "%"; }
  function interval(ci, fmt) { return ci ? " [" + fmt(ci[0]) + ", " + fmt(ci[1]) + "]" : ""; }
  // The ratios between which a comparison is SAME; an upper end of null is unbounded.
  function bandText(band) {
    if (band[1] === null) return band[0] === 0 ? "any" : "\u2265 " + times(band[0]);
    return band[0].toFixed(2) + "\u2013" + times(band[1]);
  }
  function count(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }
  function axesText(axes) {
    return Object.keys(axes).map(function (k) { return k + "=" + axes[k]; }).join(", ") || "(no axes)";
  }

  // ---------------------------------------------------------------------------------------------------- scales
  function niceTicks(lo, hi, count) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var step = Math.pow(10, Math.floor(Math.log10(span / count)));
    var err = span / count / step;
    step *= err >= 5 ? 10 : err >= 2 ? 5 : err >= 1.4 ? 2 : 1;
    var ticks = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(parseFloat(t.toPrecision(12)));
    return ticks;
  }
  function linear(lo, hi, r0, r1) {
    if (hi === lo) { lo -= 1; hi += 1; }
    var f = function (v) { return r0 + (v - lo) / (hi - lo) * (r1 - r0); };
    f.ticks = function () { return niceTicks(lo, hi, 5); };
    return f;
  }
  function logScale(lo, hi, r0, r1, base) {
    if (hi <= lo) { lo /= 2; hi *= 2; }
    var a = Math.log(lo), b = Math.log(hi);
    var f = function (v) { return r0 + (Math.log(v) - a) / (b - a) * (r1 - r0); };
    f.ticks = function () {
      var ticks = [];
      if (base === 2) {
        for (var e = Math.ceil(Math.log2(lo)); e <= Math.floor(Math.log2(hi)); e++) ticks.push(Math.pow(2, e));
        return ticks;
      }
      var decades = Math.log10(hi) - Math.log10(lo);
      var steps = decades > 2.5 ? [1] : decades > 1 ? [1, 2, 5] : [1, 1.5, 2, 3, 5, 7];
      for (var d = Math.floor(Math.log10(lo)); d <= Math.ceil(Math.log10(hi)); d++) {
        steps.forEach(function (m) {
          var t = m * Math.pow(10, d);
          if (t >= lo && t <= hi) ticks.push(parseFloat(t.toPrecision(6)));
        });
      }
      return ticks.length >= 2 ? ticks : niceTicks(lo, hi, 4);
    };
    return f;
  }
  function logDomain(values, include) {
    var positive = values.filter(function (v) { return v > 0 && isFinite(v); }).concat(include || []);
    var lo = Math.min.apply(null, positive), hi = Math.max.apply(null, positive);
    return [lo / 1.15, hi * 1.15];
  }

  // ----------------------------------------------------------------------------------------------------- plots
  function figure(parent, id, title, subtitle) {
    var fig = h("figure", { "class": "plot", "data-plot": id }, null, parent);
    var caption = h("figcaption", {}, title, fig);
    if (subtitle) h("span", {}, subtitle, caption);
    return fig;
  }
  function legend(parent, entries) {
    var box = h("div", { "class": "legend" }, null, parent);
    entries.forEach(function (e) {
      var item = h("span", {}, null, box);
      var swatch = h("i", e.dashed ? { "class": "dash" } : { style: "background:" + e.color }, null, item);
      if (e.dashed) swatch.style.borderTopColor = e.color;
      item.appendChild(document.createTextNode(e.name));
    });
  }
  function frame(fig, height) {
    return s("svg", { viewBox: "0 0 " + W + " " + (height || H), role: "img" }, fig);
  }
  function yAxis(svg, scale, label, fmt, height) {
    var g = s("g", { "class": "axis" }, svg);
    var grid = s("g", { "class": "grid" }, svg);
    scale.ticks().forEach(function (t) {
      var y = scale(t);
      s("line", { x1: M.left, x2: W - M.right, y1: y, y2: y }, grid);
      s("text", { x: M.left - 6, y: y + 4, "text-anchor": "end" }, g).textContent = fmt(t);
    });
    s("line", { x1: M.left, x2: M.left, y1: M.top, y2: (height || H) - M.bottom }, g);
    var yMid = (M.top + (height || H) - M.bottom) / 2;
    s("text", { "class": "label", x: 14, y: yMid, transform: "rotate(-90 14 " + yMid + ")", "text-anchor": "middle" },
      svg).textContent = label;
  }
  function xAxisNumeric(svg, scale, label, fmt) {
    var g = s("g", { "class": "axis" }, svg);
    var y0 = H - M.bottom;
    s("line", { x1: M.left, x2: W - M.right, y1: y0, y2: y0 }, g);
    scale.ticks().forEach(function (t) {
      var x = scale(t);
      s("line", { x1: x, x2: x, y1: y0, y2: y0 + 4 }, g);
      s("text", { x: x, y: y0 + 16, "text-anchor": "middle" }, g).textContent = fmt(t);
    });
    s("text", { "class": "label", x: (M.left + W - M.right) / 2, y: H - 8, "text-anchor": "middle" }, svg).textContent = label;
  }
  function xAxisBand(svg, xs, labels, titles, label) {
    var g = s("g", { "class": "axis" }, svg);
    var y0 = H - M.bottom;
    s("line", { x1: M.left, x2: W - M.right, y1: y0, y2: y0 }, g);
    var every = Math.max(1, Math.ceil(labels.length / 32));
    labels.forEach(function (text, i) {
      if (i % every) return;
      var x = xs(i);
      s("line", { x1: x, x2: x, y1: y0, y2: y0 + 4 }, g);
      var t = s("text", { x: x, y: y0 + 14, "text-anchor": "end", transform: "rotate(-35 " + x + " " + (y0 + 14) + ")" }, g);
      t.textContent = text;
      titled(t, titles[i]);
    });
    s("text", { "class": "label", x: (M.left + W - M.right) / 2, y: H - 4, "text-anchor": "middle" }, svg).textContent = label;
  }

  // x positions of a definition's workloads: one var axis (numeric) or every workload in order (band).
  function xLayout(def, axis) {
    var n = def.workloads.length;
    if (axis) {
      var values = def.workloads.map(function (w) { return w.axes[axis]; });
      var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
      var useLog = lo > 0 && hi / lo >= 16;
      var scale = useLog ? logScale(lo, hi, M.left + 12, W - M.right - 12, 2) : linear(lo, hi, M.left + 12, W - M.right - 12);
      var distinct = new Set(values).size === n;
      return { x: function (w) { return scale(values[w]); }, order: function (w) { return values[w]; },
               connect: distinct, draw: function (svg) { xAxisNumeric(svg, scale, axis + (useLog ? " (log scale)" : ""), num); },
               jitter: 0 };
    }
    var band = (W - M.left - M.right) / Math.max(n, 1);
    var xs = function (i) { return M.left + band * (i + 0.5); };
    // each workload by the values of the axes that tell the workloads apart (payload.label_axes); a label two
    // workloads would share gets its place in the order too
    var labelAxes = def.label_axes;
    var labels = def.workloads.map(function (w) {
      return labelAxes.map(function (a) { return w.axes[a]; }).join("\u00b7");
    });
    var seenLabels = {};
    labels.forEach(function (text) { seenLabels[text] = (seenLabels[text] || 0) + 1; });
    labels = labels.map(function (text, i) {
      return text === "" ? "#" + (i + 1) : seenLabels[text] > 1 ? text + " #" + (i + 1) : text;
    });
    var titles = def.workloads.map(function (w) { return axesText(w.axes) + " (" + w.uuid + ")"; });
    var name = labelAxes.length ? "workload (" + labelAxes.join("\u00b7") + ")" : "workload";
    return { x: xs, order: function (w) { return w; }, connect: true, jitter: Math.min(band / 3, 10),
             draw: function (svg) { xAxisBand(svg, xs, labels, titles, name); } };
  }

  // Points with vertical intervals, one series each; y on a log scale.
  function seriesPlot(fig, layout, series, yLabel, refLine) {
    var values = [];
    series.forEach(function (se) {
      se.points.forEach(function (p) {
        values.push(p.y);
        if (p.ci) { p.ci.forEach(function (v) { if (v !== null) { values.push(v); } }); }
      });
    });
    var domain = logDomain(values, refLine ? [refLine] : []);
    var y = logScale(domain[0], domain[1], H - M.bottom, M.top, 10);
    var svg = frame(fig);
    yAxis(svg, y, yLabel, num);
    layout.draw(svg);
    if (refLine) {
      s("line", { x1: M.left, x2: W - M.right, y1: y(refLine), y2: y(refLine), stroke: "#555", "stroke-dasharray": "4 3" }, svg);
    }
    series.forEach(function (se, k) {
      var shift = layout.jitter * (k - (series.length - 1) / 2) / Math.max(series.length, 1);
      var points = se.points.slice().sort(function (a, b) { return layout.order(a.w) - layout.order(b.w); });
      var g = s("g", {}, svg);
      if (layout.connect && points.length > 1) {
        var d = points.map(function (p, i) { return (i ? "L" : "M") + (layout.x(p.w) + shift).toFixed(1) + " " + y(p.y).toFixed(1); });
        s("path", { d: d.join(" "), fill: "none", stroke: se.color, "stroke-width": 1.6,
                    "stroke-dasharray": se.dashed ? "5 4" : "none", opacity: 0.85 }, g);
      }
      points.forEach(function (p) {
        var cx = layout.x(p.w) + shift;
        if (p.ci) {
          // an end of null is unbounded: the bar runs to the plot's edge
          s("line", { x1: cx, x2: cx, y1: p.ci[0] === null ? H - M.bottom : y(p.ci[0]),
                      y2: p.ci[1] === null ? M.top : y(p.ci[1]), stroke: p.color || se.color, "stroke-width": 1.4 }, g);
        }
        // a latency the judge's clock set is drawn hollow
        titled(s("circle", { "class": "mark" + (p.judge ? " judge" : ""), cx: cx, cy: y(p.y), r: 3.4,
                             fill: p.judge ? "#fff" : p.color || se.color, stroke: p.judge ? p.color || se.color : "#fff",
                             "stroke-width": p.judge ? 1.6 : 0.8 }, g), p.title);
      });
    });
  }

  // Step curves from exact breakpoints [[p, share], ...], share held until the next point.
  // Step curves from exact breakpoints [[p, share], ...], share held until the next point; a curve that ends
  // before pMax holds its last share (0 for fast_p, whose curves end past their largest speed-up) to pMax.
  function stepPlot(fig, curves, pMax, xLabel, yLabel) {
    var svg = frame(fig);
    var x = linear(0, pMax, M.left, W - M.right);
    var y = linear(0, 1, H - M.bottom, M.top);
    yAxis(svg, y, yLabel, pct);
    xAxisNumeric(svg, x, xLabel, num);
    curves.forEach(function (c) {
      var d = "M" + x(c.points[0][0]).toFixed(1) + " " + y(c.points[0][1]).toFixed(1);
      for (var i = 1; i < c.points.length; i++) {
        d += " H" + x(c.points[i][0]).toFixed(1) + " V" + y(c.points[i][1]).toFixed(1);
      }
      if (c.points[c.points.length - 1][0] < pMax) d += " H" + x(pMax).toFixed(1);
      titled(s("path", { "class": "mark", d: d, fill: "none", stroke: c.color, "stroke-width": 2, opacity: 0.9 }, svg),
             c.name);
    });
  }
  // fast_p up to the farthest any curve reaches (payload: past its largest speed-up).
  function fastPPlot(parent, id, title, curves) {
    var pMax = Math.max.apply(null, curves.map(function (c) { return c.points[c.points.length - 1][0]; }));
    var f = figure(parent, id, title, "p from 0 to " + num(pMax));
    legend(f, curves);
    stepPlot(f, curves, pMax, "p (speed-up over the reference)", "evaluations");
  }

  // Rows: solutions, labelled by what sets them apart (their whole name on hover); columns: workloads. The label
  // column is as wide as the widest label, and the drawing widens rather than clip one.
  function statusGrid(fig, def) {
    var n = def.workloads.length, rows = def.solutions.length;
    var height = rows * 18 + 14;
    var svg = s("svg", { role: "img" }, fig);
    var texts = def.solutions.map(function (sol, r) {
      var t = titled(s("text", { "class": "label", x: 0, y: r * 18 + 13, "text-anchor": "end" }, svg), sol.name);
      t.appendChild(document.createTextNode(sol.label));
      return t;
    });
    var widest = 0;
    texts.forEach(function (t) { widest = Math.max(widest, t.getComputedTextLength()); });
    var labelWidth = Math.ceil(widest) + 14;
    var cell = Math.max(2, Math.min(40, (W - labelWidth - 10) / Math.max(n, 1)));
    var width = Math.max(W, labelWidth + n * cell + 10);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    texts.forEach(function (t) { t.setAttribute("x", labelWidth - 8); });
    def.solutions.forEach(function (sol, r) {
      sol.points.forEach(function (p) {
        var w = def.workloads[p.w];
        var text = sol.name + " \u00b7 " + axesText(w.axes) + "\n" + p.status +
          (p.ms !== null ? " \u00b7 " + ms(p.ms) + " ms" : "") + (p.judge ? " " + JUDGE_TEXT : "") +
          (p.log ? "\n" + p.log : "");
        titled(s("rect", { "class": "mark" + (p.judge ? " judge" : ""), x: labelWidth + p.w * cell, y: r * 18 + 2,
                           width: Math.max(cell - 1, 1), height: 15, fill: STATUS_COLORS[p.status] || "#333" }, svg), text);
      });
    });
  }
