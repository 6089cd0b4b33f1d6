/* agentkernel-kb view: an OKF bundle as a graph, a searchable list and rendered pages.
 *
 * Everything here is hand-written and self-contained: the page loads nothing. Bundle text
 * reaches the DOM only through textContent and attributes set from data, except the
 * concept bodies, which arrive as HTML from the viewer's safe markdown renderer.
 */
(function () {
  'use strict';

  var SVG_NS = 'http://www.w3.org/2000/svg';
  var PALETTE = ['#3b7dd8', '#e8833a', '#4aa564', '#d64550', '#8e6cc0', '#1fa3a3',
    '#c9a227', '#d46fa8', '#7f8c3a', '#8c6244', '#5b6ee1', '#e06666'];
  var OTHER_COLOUR = '#98a2b3';

  var data = JSON.parse(document.getElementById('okf-data').textContent);
  var concepts = data.concepts;
  var byId = new Map();
  concepts.forEach(function (c, i) { byId.set(c.id, i); c.backlinks = []; });
  concepts.forEach(function (c, i) {
    c.links.forEach(function (j) { concepts[j].backlinks.push(i); });
  });

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function svgEl(tag, className) {
    var node = document.createElementNS(SVG_NS, tag);
    if (className) { node.setAttribute('class', className); }
    return node;
  }
  function conceptHref(id) { return '#c=' + encodeURIComponent(id); }

  // -- types and colours --------------------------------------------------------------
  var typeCounts = new Map();
  concepts.forEach(function (c) { typeCounts.set(c.type, (typeCounts.get(c.type) || 0) + 1); });
  var types = Array.from(typeCounts.keys()).sort(function (a, b) {
    return typeCounts.get(b) - typeCounts.get(a) || (a < b ? -1 : a > b ? 1 : 0);
  });
  var typeColour = new Map();
  types.forEach(function (t, n) { typeColour.set(t, n < PALETTE.length ? PALETTE[n] : OTHER_COLOUR); });
  function colourOf(c) { return typeColour.get(c.type) || OTHER_COLOUR; }

  function typeBadge(c) {
    var badge = el('span', 'badge type');
    var dot = el('span', 'dot');
    dot.style.background = colourOf(c);
    badge.appendChild(dot);
    badge.appendChild(document.createTextNode(c.type || '(no type)'));
    return badge;
  }
  function badges(c, withType) {
    var box = document.createDocumentFragment();
    if (withType) { box.appendChild(typeBadge(c)); }
    box.appendChild(el('span', 'badge trust-' + c.trust, c.trust));
    if (c.stale) { box.appendChild(el('span', 'badge stale', 'stale')); }
    if (c.status && c.status !== 'stable') { box.appendChild(el('span', 'badge status', c.status)); }
    return box;
  }

  // -- header ---------------------------------------------------------------------------
  var edgeCount = concepts.reduce(function (n, c) { return n + c.links.length; }, 0);
  var staleCount = concepts.filter(function (c) { return c.stale; }).length;
  document.getElementById('bundle-title').textContent = data.title;
  document.getElementById('bundle-title').title = data.location;
  document.getElementById('bundle-stats').textContent = [
    concepts.length + ' concept' + (concepts.length === 1 ? '' : 's'),
    edgeCount + ' link' + (edgeCount === 1 ? '' : 's'),
    types.length + ' type' + (types.length === 1 ? '' : 's'),
    staleCount + ' stale'
  ].join(' · ');

  // -- the list -------------------------------------------------------------------------
  var list = document.getElementById('concept-list');
  var listItems = document.createDocumentFragment();
  var items = concepts.map(function (c) {
    var li = el('li');
    var a = el('a');
    a.href = conceptHref(c.id);
    a.setAttribute('data-id', c.id);
    var title = el('div', 'item-title');
    var dot = el('span', 'dot');
    dot.style.background = colourOf(c);
    title.appendChild(dot);
    title.appendChild(el('span', null, c.title));
    a.appendChild(title);
    a.appendChild(el('div', 'item-id', c.id));
    var row = el('div', 'item-badges');
    row.appendChild(badges(c, false));
    a.appendChild(row);
    li.appendChild(a);
    listItems.appendChild(li);
    return li;
  });
  list.appendChild(listItems);
  var haystacks = concepts.map(function (c) {
    return [c.title, c.id, c.type, c.description, c.tags.join(' '), c.trust,
      c.stale ? 'stale' : '', c.status].join('\n').toLowerCase();
  });

  // -- type legend (click to filter) ----------------------------------------------------
  var activeTypes = new Set();
  var legend = document.getElementById('type-legend');
  var chips = types.map(function (t) {
    var chip = el('button', 'type-chip');
    chip.type = 'button';
    var dot = el('span', 'dot');
    dot.style.background = typeColour.get(t);
    chip.appendChild(dot);
    chip.appendChild(document.createTextNode((t || '(no type)') + ' ' + typeCounts.get(t)));
    chip.addEventListener('click', function () {
      if (activeTypes.has(t)) { activeTypes.delete(t); } else { activeTypes.add(t); }
      applyFilter();
    });
    legend.appendChild(chip);
    return chip;
  });

  // -- diagnostics ----------------------------------------------------------------------
  if (data.diagnostics.length) {
    var box = document.getElementById('diagnostics');
    box.hidden = false;
    box.querySelector('summary').textContent = data.diagnostics.length + ' diagnostic' +
      (data.diagnostics.length === 1 ? '' : 's') + ' (documents skipped and why)';
    var ul = box.querySelector('ul');
    data.diagnostics.forEach(function (d) { ul.appendChild(el('li', null, d)); });
  }

  // -- the graph: nodes and edges, laid out by layout.js ---------------------------------
  var nodes = concepts.map(function (c) {
    var degree = c.links.length + c.backlinks.length;
    return { id: c.id, title: c.title, x: 0, y: 0, degree: degree, r: 0, edges: [] };
  });
  var baseRadius = concepts.length <= 80 ? 9 : 7;
  nodes.forEach(function (n) { n.r = Math.min(baseRadius + 2.5 * Math.sqrt(n.degree), 26); });

  var edges = [];
  (function buildEdges() {
    var seen = new Map();
    concepts.forEach(function (c, a) {
      c.links.forEach(function (b) {
        if (a === b) { return; }
        var key = a < b ? a + ' ' + b : b + ' ' + a;
        var existing = seen.get(key);
        if (existing) { existing.both = true; return; }
        var edge = { a: a, b: b, both: false, line: null };
        seen.set(key, edge);
        edges.push(edge);
        nodes[a].edges.push(edge);
        nodes[b].edges.push(edge);
      });
    });
  })();

  // -- drawing --------------------------------------------------------------------------
  var svg = document.getElementById('graph');
  var viewport = document.getElementById('viewport');
  var edgeLayer = document.getElementById('edges');
  var nodeLayer = document.getElementById('nodes');
  var view = { x: 0, y: 0, k: 1 };
  var byDegree = nodes.map(function (n, i) { return i; })
    .sort(function (a, b) { return nodes[b].degree - nodes[a].degree || a - b; });
  var MAX_LABELS = 150;
  // the most-linked concepts always carry a label: the top tenth (at least 3) of those linked
  var pinnedCount = Math.min(Math.max(3, Math.ceil(nodes.length / 10)),
    nodes.filter(function (n) { return n.degree > 0; }).length);
  var labelsPending = false;

  (function () {
    var pane = svg.getBoundingClientRect();
    // the shape of the drawing area: the pane less its padding and the key (see fit)
    var width = pane.width - 48;
    var height = pane.height - 92;
    var aspect = width > 0 && height > 0 ? Math.min(Math.max(height / width, 0.4), 3) : 1;
    OKFLayout.run(nodes, edges, aspect);
  })();
  nodes.forEach(function (node, i) {
    var c = concepts[i];
    var g = svgEl('g', 'node trust-' + c.trust);
    g.setAttribute('data-id', c.id);
    var tip = svgEl('title');
    tip.textContent = c.title + '\n' + c.id + '\n' + c.type + ' · ' + c.trust + (c.stale ? ' · stale' : '');
    g.appendChild(tip);
    if (c.stale) {
      var ring = svgEl('circle', 'stale-ring');
      ring.setAttribute('r', String(node.r + 4));
      g.appendChild(ring);
    }
    var circle = svgEl('circle', 'body');
    circle.setAttribute('r', String(node.r));
    circle.setAttribute('fill', colourOf(c));
    g.appendChild(circle);
    var label = svgEl('text');
    label.textContent = OKFLayout.shortTitle(c.title);
    g.appendChild(label);
    nodeLayer.appendChild(g);
    node.g = g;
    node.text = label;
    node.side = node.left ? 'left' : 'right';
  });
  measureLabels();
  edges.forEach(function (edge) {
    var line = svgEl('line', 'edge');
    line.setAttribute('marker-end', 'url(#arrow)');
    if (edge.both) { line.setAttribute('marker-start', 'url(#arrow)'); }
    edgeLayer.appendChild(line);
    edge.line = line;
  });

  function placeEdge(edge) {
    var a = nodes[edge.a];
    var b = nodes[edge.b];
    var dx = b.x - a.x;
    var dy = b.y - a.y;
    var d = Math.sqrt(dx * dx + dy * dy) || 1;
    var startGap = edge.both ? a.r + 3 : a.r;
    var endGap = b.r + 3;
    if (d <= startGap + endGap) { startGap = 0; endGap = 0; }
    edge.line.setAttribute('x1', (a.x + (dx / d) * startGap).toFixed(1));
    edge.line.setAttribute('y1', (a.y + (dy / d) * startGap).toFixed(1));
    edge.line.setAttribute('x2', (b.x - (dx / d) * endGap).toFixed(1));
    edge.line.setAttribute('y2', (b.y - (dy / d) * endGap).toFixed(1));
  }
  function placeNode(node) {
    node.g.setAttribute('transform', 'translate(' + node.x.toFixed(1) + ',' + node.y.toFixed(1) + ')');
  }
  function drawAll() {
    nodes.forEach(placeNode);
    edges.forEach(placeEdge);
  }
  // Each label's width at 11px, measured by the browser (an estimate could let two labels
  // touch); very large graphs keep the layout's estimate, since most labels stay hidden.
  function measureLabels() {
    if (nodes.length > 2000) { return; }
    var probe = svgEl('text');
    probe.style.fontSize = '11px'; // CSSOM, not a style attribute: the page's CSP allows it
    probe.style.visibility = 'hidden';
    nodeLayer.appendChild(probe);
    nodes.forEach(function (node) {
      probe.textContent = node.text.textContent;
      var width = probe.getComputedTextLength();
      if (width > 0) { node.labelWidth = width + 2; }
    });
    nodeLayer.removeChild(probe);
  }
  // Where a label sits: right or left of its node, or centred below or above it.
  function placeLabel(node, side, font) {
    var text = node.text;
    var gap = node.r + 3 / view.k;
    var em = font / view.k;
    var x = 0;
    var y = 0.35 * em;
    var anchor = 'middle';
    if (side === 'right') { x = gap; anchor = 'start'; }
    if (side === 'left') { x = -gap; anchor = 'end'; }
    if (side === 'below') { y = gap + 1.0 * em; }
    if (side === 'above') { y = -gap - 0.3 * em; }
    text.setAttribute('x', x.toFixed(2));
    text.setAttribute('y', y.toFixed(2));
    text.setAttribute('text-anchor', anchor);
    node.side = side;
  }
  // The screen rectangle a label takes on each side: generous, so boxes that do not meet
  // here never meet on screen.
  function labelRect(side, sx, sy, r, width, font) {
    var gap = r + 3;
    if (side === 'right') { return [sx + gap - 1, sx + gap + width + 1, sy - 0.65 * font, sy + 0.65 * font]; }
    if (side === 'left') { return [sx - gap - width - 1, sx - gap + 1, sy - 0.65 * font, sy + 0.65 * font]; }
    if (side === 'below') { return [sx - width / 2 - 1, sx + width / 2 + 1, sy + gap - 0.1 * font, sy + gap + 1.35 * font]; }
    return [sx - width / 2 - 1, sx + width / 2 + 1, sy - gap - 1.4 * font, sy - gap + 0.1 * font];
  }

  function applyView(later) {
    viewport.setAttribute('transform', 'translate(' + view.x.toFixed(1) + ',' + view.y.toFixed(1) + ') scale(' + view.k.toFixed(4) + ')');
    // zoomed out, labels keep a readable size on screen; zoomed in, they grow with the graph
    // (up to a little larger): the screen size is 11px times the zoom clamped to [1, 1.3]
    var labelScale = Math.min(Math.max(view.k, 1), 1.3) / view.k;
    nodeLayer.style.setProperty('--label-size', (11 * labelScale).toFixed(2) + 'px');
    if (!later) {
      chooseLabels();
    } else if (!labelsPending) {
      labelsPending = true;
      requestAnimationFrame(chooseLabels);
    }
  }

  // Which labels to show: the selected node and its neighbours, then the best-connected
  // nodes, each on the first side (outward, inward, below, above) where it overlaps no label
  // already shown and covers no node, so the graph never turns into a smear of text. The
  // most-linked nodes are always labelled: they may cover a node's disc, never a label.
  // The rest show on hover.
  function chooseLabels() {
    labelsPending = false;
    var box = svg.getBoundingClientRect();
    var font = 11 * Math.min(Math.max(view.k, 1), 1.3); // label height on screen
    var CELL = 64;
    var taken = new Map();
    var dots = new Map(); // on-screen node discs: a label must not cover another node
    var shown = 0;
    function cells(rect, visit) {
      for (var cx = Math.floor(rect[0] / CELL); cx <= Math.floor(rect[1] / CELL); cx++) {
        for (var cy = Math.floor(rect[2] / CELL); cy <= Math.floor(rect[3] / CELL); cy++) {
          if (visit(cx + ':' + cy)) { return true; }
        }
      }
      return false;
    }
    nodes.forEach(function (node, i) {
      var x = node.x * view.k + view.x;
      var y = node.y * view.k + view.y;
      var r = Math.max(node.r * view.k, 2);
      if (x < -r || y < -r || x > box.width + r || y > box.height + r) { return; }
      var disc = [x - r, x + r, y - r, y + r, i];
      cells(disc, function (key) {
        if (!dots.has(key)) { dots.set(key, []); }
        dots.get(key).push(disc);
        return false;
      });
    });
    function overlaps(grid, rect, self) {
      return cells(rect, function (key) {
        var list = grid.get(key);
        return !!list && list.some(function (o) {
          return o[4] !== self && o[0] < rect[1] && rect[0] < o[1] && o[2] < rect[3] && rect[2] < o[3];
        });
      });
    }
    var order = byDegree;
    if (current >= 0) {
      var first = [current].concat(nodes[current].edges.map(function (e) {
        return e.a === current ? e.b : e.a;
      }));
      order = first.concat(byDegree.filter(function (i) { return first.indexOf(i) < 0; }));
    }
    var chosen = new Map();
    order.forEach(function (i, rank) {
      var node = nodes[i];
      var sx = node.x * view.k + view.x;
      var sy = node.y * view.k + view.y;
      if (chosen.has(i) || shown >= MAX_LABELS) { return; }
      if (sx <= 0 || sy <= 0 || sx >= box.width || sy >= box.height) { return; }
      var pinned = rank < pinnedCount || i === current;
      var width = (node.labelWidth * font) / 11;
      var r = node.r * view.k;
      var sides = node.left ? ['left', 'right', 'below', 'above'] : ['right', 'left', 'below', 'above'];
      var best = null;
      var covering = null; // inside the pane, over a node's disc
      var outside = null; // partly outside the pane
      for (var s = 0; s < sides.length && best === null; s++) {
        var rect = labelRect(sides[s], sx, sy, r, width, font);
        rect[4] = i;
        if (overlaps(taken, rect, -1)) { continue; }
        var inside = rect[0] >= 0 && rect[1] <= box.width && rect[2] >= 0 && rect[3] <= box.height;
        if (inside && !overlaps(dots, rect, i)) { best = [sides[s], rect]; }
        if (inside && covering === null) { covering = [sides[s], rect]; }
        if (outside === null) { outside = [sides[s], rect]; }
      }
      var pick = best || (pinned ? covering || outside : null);
      if (pick) { chosen.set(i, pick); }
      if (chosen.has(i)) {
        var placed = chosen.get(i)[1];
        cells(placed, function (key) {
          if (!taken.has(key)) { taken.set(key, []); }
          taken.get(key).push(placed);
          return false;
        });
        shown++;
      }
    });
    nodes.forEach(function (node, i) {
      var pick = chosen.get(i);
      if (pick) { placeLabel(node, pick[0], font); }
      var show = !!pick;
      if (show !== !!node.labelled) {
        node.labelled = show;
        node.g.classList.toggle('lbl', show);
      }
    });
  }

  // Fit the nodes to the pane, leaving a margin where the outermost labels can go; the
  // labels then find a side that fits (see chooseLabels).
  function fit() {
    var box = svg.getBoundingClientRect();
    if (!nodes.length || !box.width || !box.height) { return; }
    var keyHeight = 44; // the key along the bottom of the pane
    var padX = Math.min(24 + (nodes.length <= 300 ? 56 : 0), box.width / 5);
    var padY = 28;
    var b = OKFLayout.bounds(nodes);
    var width = Math.max(b.maxX - b.minX, 1);
    var height = Math.max(b.maxY - b.minY, 1);
    var k = Math.min((box.width - 2 * padX) / width, (box.height - 2 * padY - keyHeight) / height, 4);
    view.k = Math.max(k, 0.02);
    view.x = (box.width - width * view.k) / 2 - b.minX * view.k;
    view.y = padY + (box.height - 2 * padY - keyHeight - height * view.k) / 2 - b.minY * view.k;
    applyView();
  }
  function ensureVisible(i) {
    var box = svg.getBoundingClientRect();
    var node = nodes[i];
    var sx = node.x * view.k + view.x;
    var sy = node.y * view.k + view.y;
    var margin = 40;
    if (sx < margin || sy < margin || sx > box.width - margin || sy > box.height - margin) {
      view.x = box.width / 2 - node.x * view.k;
      view.y = box.height / 2 - node.y * view.k;
      applyView();
    }
  }

  drawAll();
  fit();

  // -- pan, zoom, drag ------------------------------------------------------------------
  var gesture = null;
  svg.addEventListener('wheel', function (event) {
    event.preventDefault();
    var box = svg.getBoundingClientRect();
    var px = event.clientX - box.left;
    var py = event.clientY - box.top;
    var k = Math.min(Math.max(view.k * Math.exp(-event.deltaY * 0.0015), 0.02), 8);
    view.x = px - ((px - view.x) * k) / view.k;
    view.y = py - ((py - view.y) * k) / view.k;
    view.k = k;
    applyView(true);
  }, { passive: false });
  svg.addEventListener('pointerdown', function (event) {
    if (event.button !== 0) { return; }
    var target = event.target.closest ? event.target.closest('g.node') : null;
    var index = target ? byId.get(target.getAttribute('data-id')) : undefined;
    gesture = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y, node: index, moved: false };
    svg.setPointerCapture(event.pointerId);
    if (index === undefined) { svg.classList.add('panning'); }
  });
  svg.addEventListener('pointermove', function (event) {
    if (!gesture) { return; }
    var dx = event.clientX - gesture.x;
    var dy = event.clientY - gesture.y;
    if (!gesture.moved && dx * dx + dy * dy < 16) { return; }
    gesture.moved = true;
    if (gesture.node === undefined) {
      view.x = gesture.vx + dx;
      view.y = gesture.vy + dy;
      applyView(true);
    } else {
      var box = svg.getBoundingClientRect();
      var node = nodes[gesture.node];
      node.x = (event.clientX - box.left - view.x) / view.k;
      node.y = (event.clientY - box.top - view.y) / view.k;
      placeNode(node);
      node.edges.forEach(placeEdge);
    }
  });
  function endGesture(event) {
    if (!gesture) { return; }
    var done = gesture;
    gesture = null;
    svg.classList.remove('panning');
    if (svg.hasPointerCapture(event.pointerId)) { svg.releasePointerCapture(event.pointerId); }
    if (!done.moved && done.node !== undefined && event.type === 'pointerup') {
      location.hash = conceptHref(concepts[done.node].id);
    }
  }
  svg.addEventListener('pointerup', endGesture);
  svg.addEventListener('pointercancel', endGesture);
  document.getElementById('fit-button').addEventListener('click', fit);
  window.addEventListener('resize', fit);

  // -- search and type filter -------------------------------------------------------------
  var search = document.getElementById('search');
  var countLine = document.getElementById('list-count');
  function applyFilter() {
    var tokens = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    var filtering = tokens.length > 0 || activeTypes.size > 0;
    var shown = 0;
    var visible = concepts.map(function (c, i) {
      var ok = (activeTypes.size === 0 || activeTypes.has(c.type)) &&
        tokens.every(function (t) { return haystacks[i].indexOf(t) >= 0; });
      items[i].hidden = !ok;
      nodes[i].g.classList.toggle('nomatch', !ok);
      if (ok) { shown++; }
      return ok;
    });
    edges.forEach(function (edge) {
      edge.line.classList.toggle('nomatch', !(visible[edge.a] && visible[edge.b]));
    });
    chips.forEach(function (chip, n) {
      chip.classList.toggle('on', activeTypes.has(types[n]));
      chip.classList.toggle('off', activeTypes.size > 0 && !activeTypes.has(types[n]));
    });
    svg.classList.toggle('filtering', filtering);
    countLine.textContent = filtering
      ? 'Showing ' + shown + ' of ' + concepts.length + ' concepts'
      : concepts.length + ' concept' + (concepts.length === 1 ? '' : 's');
  }
  search.addEventListener('input', applyFilter);

  // -- detail panel ---------------------------------------------------------------------
  var detail = document.getElementById('detail');
  var current = -1;

  function conceptLinkItem(j) {
    var li = el('li');
    var dot = el('span', 'dot');
    dot.style.background = colourOf(concepts[j]);
    li.appendChild(dot);
    var a = el('a', null, concepts[j].title);
    a.href = conceptHref(concepts[j].id);
    a.title = concepts[j].id;
    li.appendChild(a);
    return li;
  }
  function relationList(title, indexes, box) {
    var section = el('div');
    section.appendChild(el('h3', null, title + ' (' + indexes.length + ')'));
    var ul = el('ul');
    if (!indexes.length) { ul.appendChild(el('li', 'none', 'none')); }
    indexes.forEach(function (j) { ul.appendChild(conceptLinkItem(j)); });
    section.appendChild(ul);
    box.appendChild(section);
  }
  function factValue(key, value) {
    if ((key === 'resource') && /^https?:\/\//i.test(value)) {
      var a = el('a', null, value);
      a.href = value;
      a.target = '_blank';
      a.rel = 'noopener noreferrer nofollow';
      return a;
    }
    return document.createTextNode(value);
  }
  function markdownBlock(html) {
    var body = el('div', 'markdown');
    body.innerHTML = html; // produced by the viewer's escaping markdown renderer
    return body;
  }

  function showConcept(i) {
    var c = concepts[i];
    detail.replaceChildren();
    detail.setAttribute('data-showing', c.id);
    detail.appendChild(el('div', 'crumbs', c.id));
    detail.appendChild(el('h2', null, c.title));
    var row = el('div', 'badges');
    row.appendChild(badges(c, true));
    detail.appendChild(row);
    if (c.description) { detail.appendChild(el('p', 'description', c.description)); }
    if (c.tags.length) {
      var tags = el('div', 'tags');
      c.tags.forEach(function (t) { tags.appendChild(el('span', 'tag', '#' + t)); });
      detail.appendChild(tags);
    }
    if (c.facts.length) {
      var dl = el('dl', 'facts');
      c.facts.forEach(function (fact) {
        dl.appendChild(el('dt', null, fact[0]));
        var dd = el('dd');
        dd.appendChild(factValue(fact[0], fact[1]));
        dl.appendChild(dd);
      });
      detail.appendChild(dl);
    }
    var relations = el('div', 'relations');
    relationList('Links', c.links, relations);
    relationList('Backlinks', c.backlinks, relations);
    if (c.broken.length) {
      var broken = el('div', 'broken');
      broken.appendChild(el('h3', null, 'Broken links (' + c.broken.length + ')'));
      var ul = el('ul');
      c.broken.forEach(function (b) { ul.appendChild(el('li', null, b)); });
      broken.appendChild(ul);
      relations.appendChild(broken);
    }
    detail.appendChild(relations);
    if (c.frontmatter) {
      var fm = el('details', 'frontmatter');
      fm.appendChild(el('summary', null, 'Frontmatter'));
      fm.appendChild(el('pre', null, c.frontmatter));
      detail.appendChild(fm);
    }
    detail.appendChild(markdownBlock(c.html));
    detail.scrollTop = 0;
    highlight(i);
    ensureVisible(i);
  }

  function highlight(i) {
    if (current >= 0) {
      items[current].firstChild.classList.remove('current');
      nodes[current].g.classList.remove('selected');
      nodes[current].edges.forEach(function (e) {
        e.line.classList.remove('hi');
        e.line.setAttribute('marker-end', 'url(#arrow)');
        if (e.both) { e.line.setAttribute('marker-start', 'url(#arrow)'); }
        nodes[e.a === current ? e.b : e.a].g.classList.remove('neighbor');
      });
    }
    current = i;
    svg.classList.toggle('focus', i >= 0);
    chooseLabels(); // the selected node and its neighbours are labelled first
    if (i < 0) { return; }
    items[i].firstChild.classList.add('current');
    nodes[i].g.classList.add('selected');
    nodes[i].g.parentNode.appendChild(nodes[i].g);
    nodes[i].edges.forEach(function (e) {
      e.line.classList.add('hi');
      e.line.setAttribute('marker-end', 'url(#arrow-hi)');
      if (e.both) { e.line.setAttribute('marker-start', 'url(#arrow-hi)'); }
      nodes[e.a === i ? e.b : e.a].g.classList.add('neighbor');
    });
    var item = items[i].firstChild;
    var nav = item.closest('nav');
    var top = item.offsetTop - nav.offsetTop;
    if (top < nav.scrollTop || top > nav.scrollTop + nav.clientHeight - item.offsetHeight) {
      nav.scrollTop = top - nav.clientHeight / 3;
    }
  }

  function countsList(entries) {
    var dl = el('dl', 'counts');
    entries.forEach(function (entry) {
      dl.appendChild(el('dt', null, entry[0]));
      dl.appendChild(el('dd', null, entry[1]));
    });
    return dl;
  }

  function showDirectory(dir) {
    highlight(-1);
    detail.replaceChildren();
    detail.setAttribute('data-showing', dir ? dir + '/' : '');
    var wrap = el('div', 'overview');
    if (dir) {
      wrap.appendChild(el('div', 'crumbs', dir + '/'));
      wrap.appendChild(el('h2', null, 'Directory ' + dir + '/'));
    } else {
      wrap.appendChild(el('div', 'crumbs', data.location));
      wrap.appendChild(el('h2', null, data.title));
    }
    var inside = [];
    concepts.forEach(function (c, i) {
      if (!dir || c.id.indexOf(dir + '/') === 0) { inside.push(i); }
    });
    var tiers = { 'unverified': 0, 'machine-confirmed': 0, 'human-reviewed': 0 };
    var byType = new Map();
    var stale = [];
    inside.forEach(function (i) {
      var c = concepts[i];
      tiers[c.trust] = (tiers[c.trust] || 0) + 1;
      byType.set(c.type, (byType.get(c.type) || 0) + 1);
      if (c.stale) { stale.push(i); }
    });
    var entries = [['concepts', String(inside.length)]];
    byType.forEach(function (count, t) { entries.push(['type: ' + (t || '(no type)'), String(count)]); });
    Object.keys(tiers).forEach(function (t) { entries.push(['trust: ' + t, String(tiers[t])]); });
    entries.push(['stale', String(stale.length)]);
    wrap.appendChild(countsList(entries));
    if (stale.length) {
      wrap.appendChild(el('h3', null, 'Stale concepts'));
      var ul = el('ul', 'concepts');
      stale.slice(0, 100).forEach(function (i) { ul.appendChild(conceptLinkItem(i)); });
      if (stale.length > 100) {
        ul.appendChild(el('li', 'none', 'and ' + (stale.length - 100) + ' more (search for "stale")'));
      }
      wrap.appendChild(ul);
    }
    detail.appendChild(wrap);
    var index = data.directories[dir];
    if (index) {
      detail.appendChild(markdownBlock(index));
    } else if (dir) {
      var listing = el('ul', 'concepts');
      inside.slice(0, 500).forEach(function (i) { listing.appendChild(conceptLinkItem(i)); });
      detail.appendChild(listing);
    }
    detail.scrollTop = 0;
  }

  detail.addEventListener('click', function (event) {
    var link = event.target.closest ? event.target.closest('a[data-fn]') : null;
    if (!link || !detail.contains(link)) { return; }
    event.preventDefault();
    var label = link.getAttribute('data-fn');
    var notes = detail.querySelectorAll('.footnotes li[data-fn]');
    for (var n = 0; n < notes.length; n++) {
      if (notes[n].getAttribute('data-fn') === label) {
        notes[n].scrollIntoView({ block: 'center' });
        notes[n].classList.add('flash');
        break;
      }
    }
  });

  // -- routing: #c=<id> opens a concept, #d=<dir> a directory, nothing the overview ------
  function route() {
    var hash = location.hash.slice(1);
    var value = '';
    try { value = decodeURIComponent(hash.slice(2)); } catch (err) { value = ''; }
    if (hash.indexOf('c=') === 0 && byId.has(value)) {
      showConcept(byId.get(value));
    } else if (hash.indexOf('d=') === 0 && Object.prototype.hasOwnProperty.call(data.directories, value)) {
      showDirectory(value);
    } else {
      showDirectory('');
    }
  }
  document.getElementById('home-link').addEventListener('click', function (event) {
    event.preventDefault();
    if (location.hash) { location.hash = ''; } else { route(); }
  });
  window.addEventListener('hashchange', route);
  applyFilter();
  route();
  document.body.setAttribute('data-ready', 'true');
})();
