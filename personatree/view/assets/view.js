// personatree tree view. Plain ES2017, no dependencies, no network: the data sits in
// <script id="pt-data" type="application/json"> and every user string goes in via
// textContent, never innerHTML, so stored text cannot inject markup.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("pt-data").textContent);
  var N = D.nodes;
  var canvas = document.getElementById("canvas");
  var svg = document.getElementById("edges");
  var panel = document.getElementById("panel");
  var SVGNS = "http://www.w3.org/2000/svg";

  // Geometry (px). Cards have fixed heights and clamp their text, so layout is a pure
  // function of the data and the expanded set.
  var COL = 236, W = 214, GAP_GROUP = 22;
  var H = { root: 92, mid: 92, leaf: 58 };
  var Y_ROOT = 8, Y_MID = 136, Y_LEAF = 262, LEAF_STEP = 66, LEAF_INDENT = 16;

  var expanded = {};      // mid id (or "__orphans") -> leaves shown
  var boxes = {};         // node id -> {x, y, w, h}
  var selected = null;

  var totalLeaves = D.counts.leaf || 0;
  // Small trees open fully; big ones start with the claims only.
  var openByDefault = totalLeaves <= 160;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function day(iso) { return iso ? iso.slice(0, 10) : ""; }
  function span(a, b) { a = day(a); b = day(b); return a === b ? a : a + " \u2192 " + b; }
  function pct(c) { return Math.round(c * 100) + "%"; }
  function isConflictLeaf(n) { return n.level === "leaf" && !n.parent && n.conflicts_with.length > 0; }
  function byConf(ids) {
    return ids.slice().sort(function (a, b) { return (N[b].conf - N[a].conf) || (N[b].n_support - N[a].n_support); });
  }
  function isOpen(id) { return expanded[id] === undefined ? openByDefault : expanded[id]; }
  // A changed pattern reads current state first, as recall and the profile read it.
  function shownText(n) {
    if (!n.changed) return n.content;
    return (n.now && N[n.now] ? "now: \u201c" + N[n.now].content + "\u201d; " : "") + "before: " + n.content;
  }

  // ---- cards -------------------------------------------------------------------
  function card(id, x, y, h) {
    var n = N[id];
    var c = el("div", "card " + n.level + (isConflictLeaf(n) ? " conflict" : ""));
    c.dataset.id = id;
    c.dataset.level = n.level;
    c.tabIndex = 0;
    c.setAttribute("role", "button");
    c.setAttribute("aria-label", n.level + " " + n.type + ": " + shownText(n));
    c.style.left = x + "px"; c.style.top = y + "px"; c.style.width = W + "px"; c.style.height = h + "px";
    // Confidence shows twice: as opacity of the whole card and as the size of its dot.
    c.style.opacity = String(0.42 + 0.58 * n.conf);
    var top = el("div", "top");
    var dot = el("span", "dot");
    var d = Math.round(6 + 12 * n.conf);
    dot.style.width = d + "px"; dot.style.height = d + "px";
    top.appendChild(dot);
    top.appendChild(el("span", "type", n.type));
    if (n.level !== "leaf") {
      top.appendChild(el("span", null, "+" + n.n_support + (n.n_conflict ? " \u2212" + n.n_conflict : "")));
    } else {
      top.appendChild(el("span", "when", day(n.t_first)));
    }
    if (n.changed) top.appendChild(el("span", "bad", "changed " + day(n.changed)));
    top.appendChild(el("span", "conf", pct(n.conf)));
    c.appendChild(top);
    c.appendChild(el("div", "text", shownText(n)));
    if (n.level === "mid" && (n.children.length || n.conflicts.length)) {
      var t = el("button", "toggle");
      t.type = "button";
      t.textContent = (isOpen(id) ? "\u25be " : "\u25b8 ") + n.children.length + " evidence";
      if (n.conflicts.length) {
        t.appendChild(document.createTextNode(" \u00b7 "));
        t.appendChild(el("span", "bad", n.conflicts.length + " conflict" + (n.conflicts.length > 1 ? "s" : "")));
      }
      t.addEventListener("click", function (ev) {
        ev.stopPropagation();
        expanded[id] = !isOpen(id);
        draw();
      });
      c.appendChild(t);
    }
    c.addEventListener("click", function () { select(id); });
    c.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(id); }
    });
    canvas.appendChild(c);
    boxes[id] = { x: x, y: y, w: W, h: h };
  }

  function label(x, y, text, toggleKey, count) {
    var g = el("div", "group-label");
    g.style.left = x + "px"; g.style.top = y + "px"; g.style.width = W + "px";
    g.appendChild(el("div", null, text));
    if (toggleKey) {
      var b = el("button", null, (isOpen(toggleKey) ? "\u25be hide " : "\u25b8 show ") + count);
      b.type = "button";
      b.addEventListener("click", function () { expanded[toggleKey] = !isOpen(toggleKey); draw(); });
      g.appendChild(b);
    }
    canvas.appendChild(g);
  }

  function path(d, cls, a, b) {
    var p = document.createElementNS(SVGNS, "path");
    p.setAttribute("d", d);
    if (cls) p.setAttribute("class", cls);
    p.dataset.a = a; p.dataset.b = b;
    svg.appendChild(p);
  }

  // Stack a mid's leaves under it: supporting evidence first, then the conflicts.
  function leavesUnder(midId, x) {
    var n = N[midId];
    var bottom = Y_MID + H.mid;
    if (!isOpen(midId)) return bottom;
    var y = Y_LEAF;
    var list = n.children.map(function (c) { return [c, false]; })
      .concat(n.conflicts.map(function (c) { return [c, true]; }));
    list.forEach(function (pair) {
      card(pair[0], x + LEAF_INDENT, y, H.leaf);
      var gx = x + 8, my = y + H.leaf / 2;
      path("M" + gx + "," + (Y_MID + H.mid) + " L" + gx + "," + my + " L" + (x + LEAF_INDENT) + "," + my,
           pair[1] ? "conflict" : "", pair[0], midId);
      y += LEAF_STEP;
      bottom = y;
    });
    return bottom;
  }

  function draw() {
    canvas.innerHTML = "";
    svg = document.createElementNS(SVGNS, "svg");
    svg.id = "edges";
    canvas.appendChild(svg);
    boxes = {};
    var x = 0, maxY = Y_MID + H.mid;

    D.order.roots.forEach(function (rid) {
      var mids = byConf(N[rid].children);
      var start = x;
      if (!mids.length) { x += COL; }
      mids.forEach(function (mid) {
        card(mid, x, Y_MID, H.mid);
        maxY = Math.max(maxY, leavesUnder(mid, x));
        x += COL;
      });
      var rx = start + ((x - start) - COL) / 2;
      card(rid, rx, Y_ROOT, H.root);
      mids.forEach(function (mid) {
        var a = boxes[mid], r = boxes[rid];
        var x1 = a.x + W / 2, y1 = a.y, x2 = r.x + W / 2, y2 = r.y + H.root;
        path("M" + x1 + "," + y1 + " C" + x1 + "," + (y1 - 26) + " " + x2 + "," + (y2 + 26) + " " + x2 + "," + y2,
             "", mid, rid);
      });
      x += GAP_GROUP;
    });

    if (D.order.loose_mids.length) {
      label(x, Y_ROOT + 10, "Patterns not yet part of a claim (" + D.order.loose_mids.length + ")");
      D.order.loose_mids.forEach(function (mid) {
        card(mid, x, Y_MID, H.mid);
        maxY = Math.max(maxY, leavesUnder(mid, x));
        x += COL;
      });
      x += GAP_GROUP;
    }

    var orphans = D.order.orphans;
    if (orphans.length) {
      // Orphans are the newest evidence waiting for consolidation: newest first.
      label(x, Y_MID, "Evidence not yet attached (" + orphans.length + ")", "__orphans",
            orphans.length + " leaves");
      if (isOpen("__orphans")) {
        var y = Y_LEAF;
        orphans.slice().reverse().forEach(function (id) {
          card(id, x + LEAF_INDENT, y, H.leaf);
          y += LEAF_STEP;
        });
        maxY = Math.max(maxY, y);
      }
      x += COL;
    }

    if (!D.order.roots.length && !D.order.loose_mids.length && !orphans.length) {
      label(0, Y_ROOT, "Nothing stored for this user yet.");
      x = COL;
    }
    canvas.style.width = Math.max(x, COL) + "px";
    canvas.style.height = (maxY + 20) + "px";
    svg.setAttribute("width", Math.max(x, COL));
    svg.setAttribute("height", maxY + 20);
    if (selected && boxes[selected]) highlight(selected);
    applyFilter();
  }

  // ---- selection ---------------------------------------------------------------
  function supportPath(id) {
    var out = [id], p = N[id].parent;
    while (p) { out.push(p); p = N[p].parent; }
    return out;
  }
  function subtree(id) {
    var out = [id], frontier = [id];
    while (frontier.length) {
      var next = [];
      frontier.forEach(function (f) { next = next.concat(N[f].children); });
      out = out.concat(next);
      frontier = next;
    }
    return out;
  }

  function highlight(id) {
    var onPath = {}, inSub = {};
    supportPath(id).forEach(function (p) { onPath[p] = true; });
    subtree(id).forEach(function (s) {
      inSub[s] = true;
      // Counter-evidence is part of what is shown for a claim, so it stays lit too.
      N[s].conflicts.forEach(function (c) { inSub[c] = true; });
    });
    N[id].conflicts_with.forEach(function (m) { onPath[m] = true; });
    canvas.classList.add("focus");
    Array.prototype.forEach.call(canvas.querySelectorAll(".card"), function (c) {
      var cid = c.dataset.id;
      c.classList.toggle("sel", cid === id);
      c.classList.toggle("path", cid !== id && !!onPath[cid]);
      c.classList.toggle("sub", cid !== id && !!inSub[cid]);
    });
    Array.prototype.forEach.call(svg.querySelectorAll("path"), function (p) {
      var a = p.dataset.a, b = p.dataset.b;
      var hot = (onPath[a] && onPath[b]) || (inSub[a] && (inSub[b] || b === id)) || (a === id);
      p.classList.toggle("hot", !!hot);
    });
  }

  function select(id) {
    if (!N[id]) return;
    selected = id;
    highlight(id);
    showPanel(id);
    if (history.replaceState) history.replaceState(null, "", "#node=" + encodeURIComponent(id));
    var b = boxes[id];
    if (b) {
      var s = document.getElementById("scroller");
      if (b.x < s.scrollLeft || b.x + W > s.scrollLeft + s.clientWidth) s.scrollLeft = Math.max(0, b.x - 40);
    }
  }

  function clearSelection() {
    selected = null;
    canvas.classList.remove("focus");
    Array.prototype.forEach.call(canvas.querySelectorAll(".card"), function (c) {
      c.classList.remove("sel", "path", "sub");
    });
    Array.prototype.forEach.call(svg.querySelectorAll("path.hot"), function (p) { p.classList.remove("hot"); });
    panel.innerHTML = "";
    panel.appendChild(el("p", "hint", "Click a claim, pattern or piece of evidence to see why it is believed: " +
      "its support path, the evidence under it with dates, and what contradicts it."));
  }

  // ---- the evidence panel --------------------------------------------------------
  function quote(prov) {
    var o = D.observations[prov.obs];
    var box = el("div");
    if (!o) return box;
    var m = o.messages[prov.turn] || o.messages[0];
    if (m) {
      var q = el("blockquote");
      q.appendChild(el("b", null, m.role + ": "));
      q.appendChild(document.createTextNode(m.content));
      box.appendChild(q);
    }
    if (o.messages.length > 1) {
      var det = el("details");
      det.appendChild(el("summary", null, "whole exchange (" + o.messages.length + " messages, session " + o.session + ")"));
      o.messages.forEach(function (mm) {
        var qq = el("blockquote");
        qq.appendChild(el("b", null, mm.role + ": "));
        qq.appendChild(document.createTextNode(mm.content));
        det.appendChild(qq);
      });
      box.appendChild(det);
    }
    return box;
  }

  function evidence(id, bad) {
    var n = N[id];
    var e = el("div", "ev" + (bad ? " bad" : ""));
    e.dataset.id = id;
    var when = el("div", "when", (bad ? "contradicts \u00b7 " : "") + n.type + " \u00b7 " + span(n.t_first, n.t_last) +
      " \u00b7 confidence " + pct(n.conf));
    e.appendChild(when);
    e.appendChild(el("div", null, n.content));
    if (n.reason) e.appendChild(el("div", "why", n.reason));
    n.provenance.forEach(function (p) { e.appendChild(quote(p)); });
    e.addEventListener("click", function (ev) { if (ev.target.tagName !== "SUMMARY") select(id); });
    return e;
  }

  function showPanel(id) {
    var n = N[id];
    panel.innerHTML = "";
    var head = el("div");
    head.appendChild(el("span", "chip " + n.level, n.level));
    head.appendChild(el("span", "chip " + (isConflictLeaf(n) ? "conflict" : n.level), n.type));
    panel.appendChild(head);
    panel.appendChild(el("h2", null, n.content));
    var meter = el("div", "meter"), fill = el("div");
    fill.style.width = pct(n.conf);
    meter.appendChild(fill);
    panel.appendChild(meter);
    var facts = el("dl", "facts");
    function fact(k, v) { facts.appendChild(el("dt", null, k)); facts.appendChild(el("dd", null, v)); }
    fact("confidence", pct(n.conf) + " (read " + day(D.generated) + ")");
    if (n.changed) fact("changed", day(n.changed) + (n.now && N[n.now] ? ": " + N[n.now].content : ""));
    if (n.level !== "leaf") fact("evidence", "+" + n.n_support + " supporting, \u2212" + n.n_conflict + " conflicting");
    fact("first seen", day(n.t_first));
    fact("last seen", day(n.t_last));
    fact("id", n.id);
    panel.appendChild(facts);

    panel.appendChild(el("h3", null, "Support path"));
    var ol = el("ol", "path");
    ol.id = "support-path";
    supportPath(id).reverse().forEach(function (p) {
      var li = el("li", null, "");
      li.appendChild(el("span", "chip " + N[p].level, N[p].level));
      li.appendChild(document.createTextNode(N[p].content));
      li.addEventListener("click", function () { select(p); });
      ol.appendChild(li);
    });
    panel.appendChild(ol);

    var ev = el("section", "evidence");
    ev.id = "evidence";
    if (n.level === "leaf") {
      ev.appendChild(el("h3", null, "Observation"));
      ev.appendChild(evidence(id, isConflictLeaf(n)));
      if (n.conflicts_with.length) {
        ev.appendChild(el("h3", null, "Contradicts"));
        n.conflicts_with.forEach(function (m) {
          var x = el("div", "ev bad", N[m].content);
          x.addEventListener("click", function () { select(m); });
          ev.appendChild(x);
        });
      }
    } else {
      var leaves = subtree(id).filter(function (s) { return N[s].level === "leaf"; });
      var bad = [];
      subtree(id).forEach(function (s) { if (N[s].level === "mid") bad = bad.concat(N[s].conflicts); });
      leaves.sort(function (a, b) { return N[a].t_first < N[b].t_first ? -1 : 1; });
      ev.appendChild(el("h3", null, "Evidence (" + leaves.length + " kept" +
        (n.n_support > leaves.length && n.level === "mid" ? " of " + n.n_support : "") + ")"));
      if (!leaves.length) ev.appendChild(el("p", "empty", "No evidence leaves kept (counts survive pruning)."));
      leaves.forEach(function (l) { ev.appendChild(evidence(l, false)); });
      if (n.level === "root") {
        var mids = N[id].children;
        if (mids.length) {
          ev.appendChild(el("h3", null, "Patterns behind it (" + mids.length + ")"));
          byConf(mids).forEach(function (m) {
            var x = el("div", "ev", N[m].content + "  (" + pct(N[m].conf) + ", +" + N[m].n_support + ")");
            x.style.borderLeftColor = "var(--mid)";
            x.addEventListener("click", function () { select(m); });
            ev.appendChild(x);
          });
        }
      }
      ev.appendChild(el("h3", null, "Counter-evidence (" + bad.length + ")"));
      if (!bad.length) ev.appendChild(el("p", "empty", "Nothing contradicts it."));
      bad.forEach(function (l) { ev.appendChild(evidence(l, true)); });
    }
    panel.appendChild(ev);
    panel.scrollTop = 0;
  }

  // ---- filter box --------------------------------------------------------------
  var filter = document.getElementById("filter");
  function applyFilter() {
    var q = (filter && filter.value || "").trim().toLowerCase();
    Array.prototype.forEach.call(canvas.querySelectorAll(".card"), function (c) {
      var n = N[c.dataset.id];
      c.classList.toggle("match", !!q && (n.content.toLowerCase().indexOf(q) >= 0 || n.type.indexOf(q) >= 0));
    });
  }
  if (filter) filter.addEventListener("input", applyFilter);
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") clearSelection(); });

  draw();
  clearSelection();
  var m = /#node=([^&]+)/.exec(location.hash);
  if (m && N[decodeURIComponent(m[1])]) select(decodeURIComponent(m[1]));
  // Lets tests (and people in a console) see that the page finished drawing.
  document.body.dataset.ready = "1";
})();
