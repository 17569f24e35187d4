"""The report's own style sheet and script, inlined into every report (a report references no
file and fetches nothing: it must open offline and attached to an issue).

The script reads the data block (``<script type="application/json" id="ms-data">``) and draws,
on demand, the parameter table and the hook firing order of the step picked in each section's
step list; it also filters the module tree as you type (a module matches on its path, class or
``extra_repr``; its ancestors stay visible and open).
"""

from __future__ import annotations

PAGE_CSS = """
body{margin:0;background:#fff}
.ms{max-width:1400px;margin:0 auto;padding:12px 20px 40px}
.ms h1{font-size:20px;margin:4px 0}
.ms h2{font-size:16px;margin:22px 0 6px;border-bottom:1px solid #d0d7de;padding-bottom:3px}
.ms nav a{margin-right:12px;color:#0969da;text-decoration:none}
.ms input[type=search]{width:320px;padding:3px 6px;margin:4px 0 6px}
.ms .ms-scroll{max-height:640px;overflow:auto;border:1px solid #d0d7de;padding:4px 6px}
.ms pre.ms-timeline{font-family:Menlo,"DejaVu Sans Mono",Consolas,monospace;font-size:12px;line-height:1.3;margin:0}
.ms .k0,.ms .k1{color:#1a7f37}.ms .k2,.ms .k3{color:#0550ae}.ms .k4{color:#8250df}.ms .k5{color:#cf222e;font-weight:600}
.ms .ms-hidden{display:none}
.ms .ms-hit>details>summary .ms-name,.ms li.ms-hit>.ms-name{background:#fff8c5}
.ms .ms-err{color:#cf222e}
"""

PAGE_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ms-data").textContent);
  var KINDS = ["forward_pre", "forward", "backward_pre", "backward"];
  var ARROWS = ["\u25b6", "\u25c0", "\u25b7", "\u25c1"];

  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c];
    });
  }
  function num(v) {
    if (v === null || v === undefined) return "--";
    var a = Math.abs(v);
    return (a !== 0 && (a < 1e-3 || a >= 1e5)) ? v.toExponential(3) : String(+v.toPrecision(4));
  }

  // --- the module tree: search ---------------------------------------------------------------
  var search = document.getElementById("ms-tree-search");
  var tree = document.getElementById("ms-tree");
  var count = document.getElementById("ms-tree-count");
  if (search && tree) {
    var items = Array.prototype.slice.call(tree.querySelectorAll("li[data-path]"));
    search.addEventListener("input", function () {
      var q = search.value.trim().toLowerCase();
      var hits = 0;
      items.forEach(function (li) { li.classList.remove("ms-hit"); li.classList.toggle("ms-hidden", !!q); });
      if (!q) { count.textContent = ""; return; }
      items.forEach(function (li) {
        var own = li.firstElementChild && li.firstElementChild.tagName === "DETAILS"
          ? li.firstElementChild.firstElementChild.textContent : li.textContent;
        if ((li.getAttribute("data-path") + " " + own).toLowerCase().indexOf(q) < 0) return;
        hits += 1;
        li.classList.add("ms-hit");
        for (var node = li; node && node !== tree; node = node.parentElement) {
          if (node.tagName === "LI") node.classList.remove("ms-hidden");
          if (node.tagName === "DETAILS" && node !== li.firstElementChild) node.open = true;
        }
      });
      count.textContent = hits === 1 ? "1 module matches" : hits + " modules match";
    });
  }

  // --- parameters per step ------------------------------------------------------------------
  // a cell's rest after "<td": the value, "≈" and a title when it was taken on a sample of m values
  function approx(v, m) {
    return (m && v !== null ? ' title="estimated on ' + m + ' sampled values">\u2248' : ">") + num(v);
  }

  function drawParams(step) {
    var rows = data.params[step] || [];
    var html = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], info = data.pinfo[r[0]] || ["", "", "", ""];
      html.push("<tr><td class=l>" + esc(r[0]) + "</td><td class=l>" + esc(info[0]) + "</td><td class=l>" +
        esc(info[1]) + "</td><td>" + (info[2] === "" ? "" : Number(info[2]).toLocaleString("en")) + "</td><td>" +
        esc(info[3]) + "</td><td" + approx(r[1], r[9]) + "</td><td>" + num(r[2]) + "</td><td" +
        approx(r[3], r[8]) + "</td><td" + approx(r[4], r[9]) + "</td><td" + approx(r[5], r[9]) + "</td><td" +
        (r[6] || r[7] ? " class=ms-err" : "") +
        (r[9] ? ' title="counted on ' + r[9] + ' sampled values">\u2248' : ">") + r[6] + " / " + r[7] + "</td></tr>");
    }
    document.getElementById("ms-params-body").innerHTML = html.join("");
  }

  // --- the hook firing order per step -------------------------------------------------------
  // a step's lines in order: module events are flat triples in t.m, hooks and errors [position, ...line] in t.o
  function timelineLines(t) {
    var out = [], m = t.m, o = t.o, oi = 0, mi = 0, n = m.length / 3 + o.length;
    for (var i = 0; i < n; i++) {
      if (oi < o.length && o[oi][0] === i) { out.push(o[oi].slice(1)); oi += 1; }
      else { out.push([m[mi], m[mi + 1], m[mi + 2]]); mi += 3; }
    }
    return out;
  }

  function drawTimeline(step) {
    var lines = data.timelines[step] ? timelineLines(data.timelines[step]) : [], out = [], depth = 0, pad;
    for (var i = 0; i < lines.length; i++) {
      var l = lines[i], k = l[0];
      if (k === 1 || k === 3) depth = Math.max(depth - 1, 0);
      pad = new Array(depth + 1).join("  ");
      if (k < 4) {
        out.push('<span class="k' + k + '">' + pad + ARROWS[k] + " " + KINDS[k] +
          new Array(14 - KINDS[k].length).join(" ") +
          esc(data.paths[l[1]] || "(root)") + (l[2] ? "  call " + l[2] : "") + "</span>");
      } else if (k === 4) {
        out.push('<span class="k4">' + pad + "  \u2022 hook " + esc(l[1]) + " (" + esc(l[2]) + " on " +
          esc(l[3] || "(root)") + ")" + (l[4] ? " replaced the value" : "") + "</span>");
      } else {
        out.push('<span class="k5">' + pad + "  \u2716 " + esc(l[1]) + ": " + esc(l[2]) +
          (l[3] ? " (in " + esc(l[3]) + ")" : "") + "</span>");
      }
      if (k === 0 || k === 2) depth += 1;
    }
    var note = data.timeline_cut[step];
    if (note) {
      out.push('<span class="ms-note">… ' + note.toLocaleString("en") + " more events of this step not shown</span>");
    }
    document.getElementById("ms-timeline").innerHTML = out.join("\n") || "(no module events in this step)";
  }

  function hook(selectId, draw) {
    var select = document.getElementById(selectId);
    if (!select) return;
    select.addEventListener("change", function () { draw(select.value); });
    draw(select.value);
  }
  hook("ms-params-step", drawParams);
  hook("ms-timeline-step", drawTimeline);
})();
"""
