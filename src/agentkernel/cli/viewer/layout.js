/* Graph layout for agentkernel-kb view: a small force-directed simulation, deterministic.
 *
 * Nodes start on a sunflower spiral around the centre of their top-level directory, then
 * repel each other (hubs harder; a grid limits each node to its neighbourhood, so a step
 * costs linear time), links pull like springs, and a weak gravity keeps directories
 * together and the drawing in the pane's shape. Labels are then placed and de-overlapped.
 *
 * OKFLayout.run(nodes, edges, aspect): each node is {id, title, degree, r}; each edge
 * {a, b} indexes nodes; aspect is the drawing area's height over its width. Sets x, y,
 * left (label on the left) and labelWidth on every node. OKFLayout.bounds(nodes): the box
 * the nodes' circles fill.
 */
var OKFLayout = (function () {
  'use strict';

  var LABEL_CHAR = 6.3; // average label character width at 11px, for overlap estimates

  function shortTitle(text) { return text.length > 42 ? text.slice(0, 40) + '…' : text; }

  function groupOf(id) {
    var cut = id.indexOf('/');
    return cut < 0 ? '' : id.slice(0, cut);
  }

  function run(nodes, edges, aspect) {
    var n = nodes.length;
    if (!n) { return; }
    var LINK_LENGTH = n <= 40 ? 110 : n <= 400 ? 80 : 60;
    var squeezeX = Math.sqrt(aspect);
    var squeezeY = 1 / squeezeX;
    var groups = new Map();
    nodes.forEach(function (node, i) {
      var g = groupOf(node.id);
      if (!groups.has(g)) { groups.set(g, []); }
      groups.get(g).push(i);
    });
    var groupNames = Array.from(groups.keys()).sort();
    var spread = LINK_LENGTH * Math.sqrt(n) * 0.9;
    var X = new Float64Array(n);
    var Y = new Float64Array(n);
    var GX = new Float64Array(n); // the centre of the node's top-level directory
    var GY = new Float64Array(n);
    var W = new Float64Array(n); // repulsion weight: hubs push harder
    groupNames.forEach(function (g, k) {
      var angle = (2 * Math.PI * k) / groupNames.length;
      var radius = groupNames.length > 1 ? spread * 0.55 : 0;
      var cx = (radius * Math.cos(angle)) / squeezeX;
      var cy = (radius * Math.sin(angle)) / squeezeY;
      groups.get(g).forEach(function (i, m) {
        var r = 14 * Math.sqrt(m + 0.5); // a sunflower spiral: deterministic, even
        X[i] = cx + r * Math.cos(m * 2.399963);
        Y[i] = cy + r * Math.sin(m * 2.399963);
        GX[i] = cx;
        GY[i] = cy;
      });
    });
    for (var i = 0; i < n; i++) { W[i] = 1 + Math.sqrt(nodes[i].degree); }
    var EA = new Int32Array(edges.length);
    var EB = new Int32Array(edges.length);
    edges.forEach(function (edge, e) { EA[e] = edge.a; EB[e] = edge.b; });

    var iterations = n <= 300 ? 400 : n <= 2000 ? 250 : 150;
    var k2 = LINK_LENGTH * LINK_LENGTH;
    var cutoff = LINK_LENGTH * 3;
    var cutoff2 = cutoff * cutoff;
    var FX = new Float64Array(n);
    var FY = new Float64Array(n);
    var CX = new Int32Array(n);
    var CY = new Int32Array(n);
    var order = new Int32Array(n);
    for (var it = 0; it < iterations; it++) {
      var temperature = LINK_LENGTH * 0.6 * (1 - it / iterations) + 0.5;
      FX.fill(0);
      FY.fill(0);
      // bucket the nodes into a grid of cutoff-sized cells (a counting sort)
      var minX = Infinity; var minY = Infinity; var maxX = -Infinity; var maxY = -Infinity;
      for (i = 0; i < n; i++) {
        if (X[i] < minX) { minX = X[i]; }
        if (X[i] > maxX) { maxX = X[i]; }
        if (Y[i] < minY) { minY = Y[i]; }
        if (Y[i] > maxY) { maxY = Y[i]; }
      }
      var cols = Math.floor((maxX - minX) / cutoff) + 1;
      var rows = Math.floor((maxY - minY) / cutoff) + 1;
      var start = new Int32Array(cols * rows + 1);
      for (i = 0; i < n; i++) {
        CX[i] = Math.floor((X[i] - minX) / cutoff);
        CY[i] = Math.floor((Y[i] - minY) / cutoff);
        start[CY[i] * cols + CX[i] + 1]++;
      }
      for (var c = 0; c < cols * rows; c++) { start[c + 1] += start[c]; }
      var fill = start.slice(0, cols * rows);
      for (i = 0; i < n; i++) { order[fill[CY[i] * cols + CX[i]]++] = i; }
      for (i = 0; i < n; i++) {
        var xi = X[i];
        var yi = Y[i];
        for (var gy = Math.max(CY[i] - 1, 0); gy <= Math.min(CY[i] + 1, rows - 1); gy++) {
          for (var gx = Math.max(CX[i] - 1, 0); gx <= Math.min(CX[i] + 1, cols - 1); gx++) {
            var cell = gy * cols + gx;
            for (var m = start[cell]; m < start[cell + 1]; m++) {
              var j = order[m];
              if (j <= i) { continue; }
              var dx = xi - X[j];
              var dy = yi - Y[j];
              var d2 = dx * dx + dy * dy;
              if (d2 > cutoff2) { continue; }
              if (d2 < 0.01) { // coincident: part them in a direction fixed by the pair
                dx = ((i * 7919 + j) % 13) - 5.5;
                dy = ((j * 104729 + i) % 11) - 4.5;
                d2 = dx * dx + dy * dy;
              }
              var f = (k2 * W[i] * W[j]) / d2;
              FX[i] += dx * f; FY[i] += dy * f;
              FX[j] -= dx * f; FY[j] -= dy * f;
            }
          }
        }
      }
      for (var e = 0; e < EA.length; e++) {
        var a = EA[e];
        var b = EB[e];
        var ex = X[b] - X[a];
        var ey = Y[b] - Y[a];
        var pull = Math.sqrt(ex * ex + ey * ey) / LINK_LENGTH;
        FX[a] += ex * pull; FY[a] += ey * pull;
        FX[b] -= ex * pull; FY[b] -= ey * pull;
      }
      for (i = 0; i < n; i++) {
        FX[i] += ((GX[i] - X[i]) * 0.03 - X[i] * 0.012) * squeezeX;
        FY[i] += ((GY[i] - Y[i]) * 0.03 - Y[i] * 0.012) * squeezeY;
        var len = Math.sqrt(FX[i] * FX[i] + FY[i] * FY[i]);
        if (len > 0) {
          var step = Math.min(len, temperature) / len;
          X[i] += FX[i] * step;
          Y[i] += FY[i] * step;
        }
      }
    }
    for (i = 0; i < n; i++) { nodes[i].x = X[i]; nodes[i].y = Y[i]; }
    placeLabels(nodes);
    stretchToPane(nodes, aspect);
  }

  // Forces make a round drawing: stretch it (up to twice, along one axis) towards the
  // pane's shape so that it fills the pane rather than a band of it. Labels are left out:
  // they find their own side once the graph is drawn.
  function stretchToPane(nodes, aspect) {
    var b = bounds(nodes);
    var shape = (b.maxY - b.minY) / Math.max(b.maxX - b.minX, 1);
    if (shape <= 0 || Math.abs(shape - aspect) < 0.01) { return; }
    var factor = Math.min(Math.max(aspect / shape, 0.4), 2.5);
    if (factor >= 1) {
      var middle = (b.minY + b.maxY) / 2;
      nodes.forEach(function (n) { n.y = middle + (n.y - middle) * factor; });
    } else {
      var centre = (b.minX + b.maxX) / 2;
      nodes.forEach(function (n) { n.x = centre + (n.x - centre) / factor; });
    }
  }

  // The box the nodes' circles fill: {minX, minY, maxX, maxY}.
  function bounds(nodes) {
    var b = { minX: Infinity, minY: Infinity, maxX: -Infinity, maxY: -Infinity };
    nodes.forEach(function (n) {
      b.minX = Math.min(b.minX, n.x - n.r);
      b.maxX = Math.max(b.maxX, n.x + n.r);
      b.minY = Math.min(b.minY, n.y - n.r);
      b.maxY = Math.max(b.maxY, n.y + n.r);
    });
    return b;
  }

  // Labels go on the side facing away from the graph's centre; then overlapping
  // node-plus-label boxes are pushed apart (small graphs only: large ones hide most labels).
  function placeLabels(nodes) {
    var n = nodes.length;
    var cx = 0;
    nodes.forEach(function (node) { cx += node.x; });
    cx /= n;
    nodes.forEach(function (node) {
      node.left = node.x < cx - 1;
      node.labelWidth = 4 + LABEL_CHAR * shortTitle(node.title).length;
    });
    if (n > 300) { return; }
    function box(node) {
      var half = Math.max(node.r, 8) + 3;
      return node.left
        ? [node.x - node.r - node.labelWidth, node.x + node.r, node.y - half, node.y + half]
        : [node.x - node.r, node.x + node.r + node.labelWidth, node.y - half, node.y + half];
    }
    for (var round = 0; round < 80; round++) {
      var moved = false;
      for (var i = 0; i < n; i++) {
        for (var j = i + 1; j < n; j++) {
          var a = box(nodes[i]);
          var b = box(nodes[j]);
          var overlapX = Math.min(a[1], b[1]) - Math.max(a[0], b[0]);
          var overlapY = Math.min(a[3], b[3]) - Math.max(a[2], b[2]);
          if (overlapX <= 0 || overlapY <= 0) { continue; }
          moved = true;
          var sign = nodes[i].y < nodes[j].y || (nodes[i].y === nodes[j].y && i < j) ? -1 : 1;
          var shift = Math.min(overlapY / 2 + 0.5, 6);
          nodes[i].y += sign * shift;
          nodes[j].y -= sign * shift;
        }
      }
      if (!moved) { break; }
    }
  }

  return { run: run, shortTitle: shortTitle, bounds: bounds };
})();
