/* report/html/report.js - renders heaptap's HTML report from the JSON data in the page */
/* SPDX-License-Identifier: MIT */
/*
 * The data (element #heaptap-data) is written by report/html_data.c; its
 * keys are listed there. Nothing is fetched: the page works offline.
 * Numbers the tests compare with `heaptap report --format json` are shown in
 * elements with ids (sum-*) and, in the tables, in data-v attributes. When
 * everything is drawn, <body data-rendered="ok">; an error shows in #errors
 * and sets data-rendered="error".
 */
(function () {
	'use strict';

	function showError(msg) {
		var e = document.getElementById('errors');
		e.hidden = false;
		e.textContent += msg + '\n';
		document.body.setAttribute('data-rendered', 'error');
	}
	window.addEventListener('error', function (ev) {
		showError('error: ' + ev.message + ' (line ' + ev.lineno + ')');
	});

	/* ---------------------------------------------------------------- */
	/* Formatting                                                        */

	function fmtInt(n) {
		return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	}
	/* the same text as report/units.c rpt_format_size */
	function fmtSize(n) {
		var units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'], v, u = 0;
		if (n < 1024)
			return Math.round(n) + ' B';
		v = n / 1024;
		while (v >= 1023.95 && u + 1 < units.length) {
			v /= 1024;
			u++;
		}
		return fixed1(v) + ' ' + units[u];
	}
	/*
	 * v with one decimal as C's printf("%.1f") writes it: toFixed rounds
	 * an exact tie (3.25) up, glibc to even ("3.2"); every other value
	 * they round alike (both from the exact binary value).
	 */
	function fixed1(v) {
		var t = v * 10, n = Math.floor(t);
		if (t - n === 0.5)
			return ((n % 2 ? n + 1 : n) / 10).toFixed(1);
		return v.toFixed(1);
	}
	function fmtSecs(ns) {
		return (ns / 1e9).toFixed(3) + ' s';
	}
	function pct(part, whole) {
		return whole > 0 ? (100 * part / whole).toFixed(1) + '%' : '0%';
	}
	function el(tag, attrs, kids) {
		var e = document.createElement(tag), k;
		for (k in attrs || {}) {
			if (k === 'text')
				e.textContent = attrs[k];
			else if (k === 'cls')
				e.className = attrs[k];
			else
				e.setAttribute(k, attrs[k]);
		}
		(kids || []).forEach(function (c) {
			if (c !== null && c !== undefined)
				e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
		});
		return e;
	}
	function $(id) {
		return document.getElementById(id);
	}

	var D = JSON.parse($('heaptap-data').textContent);
	var S = D.summary;

	/* ---------------------------------------------------------------- */
	/* Summary                                                           */

	function summary() {
		var box = $('summary'), notes = $('notes');
		var leakedLabel = S.attached ? 'not freed at detach' : 'leaked at exit';

		$('command').textContent = S.command + (S.pid ? '  (pid ' + S.pid + (S.attached ? ', attached' : '') + ')' : '');
		function item(id, label, value, exact, key) {
			box.appendChild(el('div', { cls: 'item' + (key ? ' key' : '') }, [
				el('div', { cls: 'label', text: label }),
				el('div', { cls: 'value' }, [
					el('span', { id: id, text: value }),
					exact === null ? null : el('span', { cls: 'exact', id: id + '-exact', text: exact })
				])
			]));
		}
		function bytes(id, label, n, key) {
			item(id, label, fmtSize(n), fmtInt(n) + ' B', key);
		}
		item('sum-duration', 'duration', fmtSecs(S.duration_ns), null);
		item('sum-calls', 'allocation calls', fmtInt(S.calls), null, true);
		item('sum-calls-per-second', 'calls per second', fmtInt(S.calls_per_second), null);
		bytes('sum-peak-heap', 'peak heap', S.peak_heap, true);
		item('sum-peak-time', 'peak heap reached at', S.peak_time_ns === null ? 'unknown' : fmtSecs(S.peak_time_ns), null);
		bytes('sum-peak-rss', 'peak RSS', S.peak_rss);
		bytes('sum-bytes', 'total allocated', S.bytes);
		bytes('sum-leaked', leakedLabel, S.leaked, true);
		item('sum-leaked-calls', 'allocations ' + leakedLabel, fmtInt(S.leaked_calls), null);
		item('sum-temporary', 'temporary allocations', fmtInt(S.temporary), S.temporary_percent.toFixed(1) + '% of calls');
		item('sum-frees', 'free calls', fmtInt(S.frees), null);
		item('sum-events', 'events recorded', fmtInt(S.events), null);

		function note(t) {
			notes.appendChild(el('div', { text: t }));
		}
		if (S.attached)
			note('Attached recording: only what was allocated after the attach is seen, and the program went on after the detach.');
		if (S.truncated)
			note('The recording is truncated (' + S.truncated_reason + '): this is what it holds.');
		if (S.estimated)
			note('Sampled recording: calls are estimates.');
		if (S.end_reason)
			note('Session end: ' + S.end_reason + '.');
		if (S.dropped_events)
			note(fmtInt(S.dropped_events) + ' invalid events were dropped.');
		$('footer').textContent = 'heaptap report of ' + (D.file || 'a recording') + '. Flame graph nodes under 0.1% of every cost are left out.';
	}

	/* ---------------------------------------------------------------- */
	/* Canvas helpers                                                    */

	function setupCanvas(c, cssHeight) {
		var dpr = window.devicePixelRatio || 1, w = c.parentNode.clientWidth || 800;
		c.style.height = cssHeight + 'px';
		c.width = Math.round(w * dpr);
		c.height = Math.round(cssHeight * dpr);
		var ctx = c.getContext('2d');
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		return { ctx: ctx, w: w, h: cssHeight };
	}
	function placeTip(tip, wrap, x, y, text) {
		tip.textContent = text;
		tip.hidden = false;
		var w = tip.offsetWidth, W = wrap.clientWidth;
		tip.style.left = Math.max(0, Math.min(x + 14, W - w - 4)) + 'px';
		tip.style.top = (y + 16) + 'px';
	}
	/* ticks at 1, 2 or 5 times a power of ten, about n of them up to max */
	function niceStep(max, n) {
		var raw = max / n, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
		return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
	}
	/* byte ticks: nice steps in the unit of max */
	function byteTicks(max, n) {
		var unit = 1, names = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], u = 0, step, out = [], v;
		while (max / unit >= 1024 && u + 1 < names.length) {
			unit *= 1024;
			u++;
		}
		step = niceStep(max / unit, n);
		/* up to the first tick at or above max: the axis must hold every value */
		for (v = 0; ; v += step) {
			out.push({ v: v * unit, label: v ? (+v.toFixed(6)) + ' ' + names[u] : '0' });
			if (v >= max / unit - 1e-9)
				break;
		}
		return out;
	}

	/* ---------------------------------------------------------------- */
	/* Heap and RSS over time                                            */

	var chart = {};

	function chartData() {
		var H = D.heap, byTime = H.t !== null, xs = byTime ? H.t : H.e, i;
		var heap = [{ x: 0, v: 0 }], rss = [], xmax = byTime ? S.duration_ns : S.events;
		for (i = 0; i < H.v.length; i++)
			heap.push({ x: xs[i], v: H.v[i] });
		for (i = 0; i < D.rss.t.length; i++)
			rss.push({ x: D.rss.t[i], v: D.rss.v[i] });
		heap.concat(byTime ? rss : []).forEach(function (p) {
			if (p.x > xmax)
				xmax = p.x;
		});
		var px = byTime ? (H.peak_t !== null ? H.peak_t : S.peak_time_ns) : (S.peak_event ? S.peak_event - 1 : null);
		return { byTime: byTime, heap: heap, rss: byTime ? rss : [], xmax: xmax || 1, peakX: px };
	}

	function drawChart() {
		var c = $('chart'), g = setupCanvas(c, 280), ctx = g.ctx, cd = chart.data;
		var L = 78, R = cd.rss.length ? 78 : 16, T = 14, B = 30, W = g.w - L - R, Ht = g.h - T - B;
		var hmax = Math.max(S.peak_heap, 1), rmax = 1, i;
		cd.rss.forEach(function (p) {
			if (p.v > rmax)
				rmax = p.v;
		});
		var ht = byteTicks(hmax * 1.08, 5), rt = byteTicks(rmax * 1.08, 5);
		hmax = ht[ht.length - 1].v || 1;
		rmax = rt[rt.length - 1].v || 1;
		function X(x) {
			return L + W * x / cd.xmax;
		}
		function YH(v) {
			return T + Ht - Ht * v / hmax;
		}
		function YR(v) {
			return T + Ht - Ht * v / rmax;
		}
		chart.geom = { L: L, W: W, T: T, Ht: Ht, X: X };
		ctx.clearRect(0, 0, g.w, g.h);
		ctx.font = '11px system-ui, sans-serif';
		/* grid and left axis (heap) */
		ctx.strokeStyle = '#e7eaf0';
		ctx.fillStyle = '#d9480f';
		ctx.textAlign = 'right';
		ctx.textBaseline = 'middle';
		ht.forEach(function (t) {
			var y = YH(t.v);
			ctx.beginPath();
			ctx.moveTo(L, y);
			ctx.lineTo(L + W, y);
			ctx.stroke();
			ctx.fillText(t.label, L - 6, y);
		});
		/* right axis (RSS) */
		if (cd.rss.length) {
			ctx.fillStyle = '#1c7ed6';
			ctx.textAlign = 'left';
			rt.forEach(function (t) {
				ctx.fillText(t.label, L + W + 6, YR(t.v));
			});
		}
		/* time axis */
		var step = niceStep(cd.xmax, Math.max(2, Math.floor(W / 90))), x;
		ctx.fillStyle = '#5d6575';
		ctx.textAlign = 'center';
		ctx.textBaseline = 'top';
		for (x = 0; x <= cd.xmax + 1e-9; x += step) {
			ctx.strokeStyle = '#c9ced8';
			ctx.beginPath();
			ctx.moveTo(X(x), T + Ht);
			ctx.lineTo(X(x), T + Ht + 4);
			ctx.stroke();
			ctx.fillText(cd.byTime ? (+(x / 1e9).toFixed(6)) + ' s' : fmtInt(x), X(x), T + Ht + 7);
		}
		if (!cd.byTime)
			ctx.fillText('events (the recording has no time ticks)', L + W / 2, T + Ht + 18);
		ctx.strokeStyle = '#9aa2b1';
		ctx.beginPath();
		ctx.moveTo(L, T);
		ctx.lineTo(L, T + Ht);
		ctx.lineTo(L + W, T + Ht);
		ctx.stroke();
		/* heap: area and line */
		if (cd.heap.length > 1) {
			ctx.beginPath();
			ctx.moveTo(X(cd.heap[0].x), YH(0));
			for (i = 0; i < cd.heap.length; i++)
				ctx.lineTo(X(cd.heap[i].x), YH(cd.heap[i].v));
			ctx.lineTo(X(cd.heap[cd.heap.length - 1].x), YH(0));
			ctx.closePath();
			ctx.fillStyle = 'rgba(217, 72, 15, 0.14)';
			ctx.fill();
			ctx.beginPath();
			for (i = 0; i < cd.heap.length; i++)
				ctx[i ? 'lineTo' : 'moveTo'](X(cd.heap[i].x), YH(cd.heap[i].v));
			ctx.strokeStyle = '#d9480f';
			ctx.lineWidth = 1.5;
			ctx.stroke();
		}
		/* RSS */
		if (cd.rss.length) {
			ctx.beginPath();
			for (i = 0; i < cd.rss.length; i++)
				ctx[i ? 'lineTo' : 'moveTo'](X(cd.rss[i].x), YR(cd.rss[i].v));
			ctx.strokeStyle = '#1c7ed6';
			ctx.lineWidth = 1.5;
			ctx.stroke();
			if (cd.rss.length === 1) { /* one tick: a dot, no line */
				ctx.fillStyle = '#1c7ed6';
				ctx.beginPath();
				ctx.arc(X(cd.rss[0].x), YR(cd.rss[0].v), 3.5, 0, 2 * Math.PI);
				ctx.fill();
			}
		}
		ctx.lineWidth = 1;
		/* the peak */
		if (cd.peakX !== null && S.peak_heap > 0) {
			var px = X(cd.peakX), py = YH(S.peak_heap), label;
			ctx.fillStyle = '#c92a2a';
			ctx.beginPath();
			ctx.arc(px, py, 4.5, 0, 2 * Math.PI);
			ctx.fill();
			label = 'peak ' + fmtSize(S.peak_heap) + (S.peak_time_ns !== null ? ' at ' + fmtSecs(S.peak_time_ns) : '');
			ctx.font = '600 12px system-ui, sans-serif';
			ctx.textBaseline = 'bottom';
			ctx.textAlign = px > L + W * 0.7 ? 'right' : 'left';
			ctx.fillText(label, px + (ctx.textAlign === 'left' ? 7 : -7), Math.max(py - 3, T + 12));
		}
		/* the hover line */
		if (chart.hoverX !== undefined) {
			ctx.strokeStyle = 'rgba(0,0,0,0.35)';
			ctx.beginPath();
			ctx.moveTo(chart.hoverX, T);
			ctx.lineTo(chart.hoverX, T + Ht);
			ctx.stroke();
		}
	}

	/* the point of list pts (sorted by x) nearest to x */
	function nearest(pts, x) {
		var lo = 0, hi = pts.length - 1, mid;
		if (!pts.length)
			return null;
		while (lo < hi) {
			mid = (lo + hi) >> 1;
			if (pts[mid].x < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && Math.abs(pts[lo - 1].x - x) < Math.abs(pts[lo].x - x))
			lo--;
		return pts[lo];
	}

	function setupChart() {
		var c = $('chart'), tip = $('chart-tip');
		chart.data = chartData();
		/* for the tests: the curve's highest point must be the reported peak */
		c.setAttribute('data-points', String(D.heap.v.length));
		c.setAttribute('data-heap-max', String(D.heap.v.reduce(function (a, b) {
			return b > a ? b : a;
		}, 0)));
		c.addEventListener('mousemove', function (ev) {
			var r = c.getBoundingClientRect(), gm = chart.geom, mx = ev.clientX - r.left, my = ev.clientY - r.top;
			if (mx < gm.L || mx > gm.L + gm.W) {
				tip.hidden = true;
				chart.hoverX = undefined;
				drawChart();
				return;
			}
			var x = (mx - gm.L) / gm.W * chart.data.xmax, h = nearest(chart.data.heap, x), rs = nearest(chart.data.rss, x);
			var lines = [chart.data.byTime ? 'time ' + fmtSecs(x) : 'event ' + fmtInt(x)];
			if (h)
				lines.push('heap ' + fmtSize(h.v) + ' (highest near here)');
			if (rs)
				lines.push('RSS ' + fmtSize(rs.v));
			chart.hoverX = mx;
			drawChart();
			placeTip(tip, c.parentNode, mx, my, lines.join('\n'));
		});
		c.addEventListener('mouseleave', function () {
			tip.hidden = true;
			chart.hoverX = undefined;
			drawChart();
		});
		drawChart();
	}

	/* ---------------------------------------------------------------- */
	/* Flame graph                                                       */

	var ROW = 18, MAX_ROWS = 120;
	var fl = { metric: 'calls', zoom: 0, rects: [], hover: -1 };

	function flameSetup() {
		var F = D.flame, a = F.nodes, n = a.length / 6, i, v;
		fl.names = F.names;
		fl.parent = new Int32Array(n);
		fl.name = new Int32Array(n);
		fl.val = { calls: new Float64Array(n), bytes: new Float64Array(n), peak: new Float64Array(n), leaked: new Float64Array(n) };
		fl.kids = [];
		fl.depth = new Int32Array(n);
		for (i = 0; i < n; i++) {
			fl.parent[i] = a[6 * i];
			fl.name[i] = a[6 * i + 1];
			fl.val.calls[i] = a[6 * i + 2];
			fl.val.bytes[i] = a[6 * i + 3];
			fl.val.peak[i] = a[6 * i + 4];
			fl.val.leaked[i] = a[6 * i + 5];
			fl.kids.push([]);
			if (i > 0) {
				v = fl.parent[i];
				fl.kids[v].push(i);
				fl.depth[i] = fl.depth[v] + 1;
			}
		}
		fl.n = n;
		/* foreign (Java, Python) frames: their own colours, and a legend when there are any */
		fl.lang = [];
		var LG = F.langs || [], seen = {};
		for (i = 0; i + 1 < LG.length; i += 2) {
			fl.lang[LG[i]] = LG[i + 1];
			seen[LG[i + 1]] = true;
		}
		var leg = $('flame-legend');
		if (leg && Object.keys(seen).length) {
			leg.hidden = false;
			['java', 'python', 'foreign'].forEach(function (k) {
				if (seen[k])
					leg.appendChild(el('span', {}, [el('span', { cls: 'key', style: 'background:' + LANG_COLOR[k] }), k + ' frames']));
			});
		}
		var c = $('flame'), tip = $('flame-tip');
		/* for the tests: the root holds every allocation */
		c.setAttribute('data-nodes', String(n));
		['calls', 'bytes', 'peak', 'leaked'].forEach(function (k) {
			c.setAttribute('data-root-' + k, String(n ? fl.val[k][0] : 0));
		});
		Array.prototype.forEach.call(document.querySelectorAll('#flame-section button[data-metric]'), function (b) {
			b.addEventListener('click', function () {
				fl.metric = b.getAttribute('data-metric');
				Array.prototype.forEach.call(document.querySelectorAll('#flame-section button[data-metric]'), function (o) {
					o.className = o === b ? 'on' : '';
				});
				drawFlame();
			});
		});
		$('flame-reset').addEventListener('click', function () {
			fl.zoom = 0;
			drawFlame();
		});
		function hit(ev) {
			var r = c.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top, i, q;
			for (i = fl.rects.length - 1; i >= 0; i--) {
				q = fl.rects[i];
				if (x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + ROW)
					return { node: q.node, x: x, y: y };
			}
			return { node: -1, x: x, y: y };
		}
		c.addEventListener('mousemove', function (ev) {
			var h = hit(ev);
			if (h.node !== fl.hover) {
				fl.hover = h.node;
				drawFlame();
			}
			if (h.node < 0) {
				tip.hidden = true;
				return;
			}
			placeTip(tip, c.parentNode, h.x, h.y, flameText(h.node));
		});
		c.addEventListener('mouseleave', function () {
			tip.hidden = true;
			fl.hover = -1;
			drawFlame();
		});
		c.addEventListener('click', function (ev) {
			var h = hit(ev);
			if (h.node >= 0) {
				fl.zoom = h.node;
				drawFlame();
			}
		});
	}

	function flameText(v) {
		var V = fl.val;
		return fl.names[fl.name[v]] + '\n' +
			'calls ' + fmtInt(V.calls[v]) + ' (' + pct(V.calls[v], V.calls[0]) + ')\n' +
			'bytes allocated ' + fmtSize(V.bytes[v]) + ' (' + pct(V.bytes[v], V.bytes[0]) + ')\n' +
			'at peak ' + fmtSize(V.peak[v]) + ' (' + pct(V.peak[v], V.peak[0]) + ')\n' +
			'leaked ' + fmtSize(V.leaked[v]) + ' (' + pct(V.leaked[v], V.leaked[0]) + ')';
	}

	function hue(s) {
		var h = 0, i;
		for (i = 0; i < s.length; i++)
			h = (h * 31 + s.charCodeAt(i)) | 0;
		return Math.abs(h);
	}
	/* Java green as flamegraph.pl's java palette has it, Python blue, another language purple */
	var LANG_COLOR = { java: 'hsl(120, 55%, 55%)', python: 'hsl(212, 70%, 62%)', foreign: 'hsl(280, 45%, 65%)' };
	function color(v) {
		var name = fl.names[fl.name[v]], h = hue(name), lg = fl.lang[v];
		if (v === 0)
			return '#adb5bd';
		if (lg === 'java')
			return 'hsl(' + (110 + h % 20) + ', ' + (45 + h % 20) + '%, ' + (50 + (h >> 3) % 10) + '%)';
		if (lg === 'python')
			return 'hsl(' + (202 + h % 20) + ', ' + (60 + h % 20) + '%, ' + (57 + (h >> 3) % 10) + '%)';
		if (lg)
			return 'hsl(' + (270 + h % 20) + ', 45%, ' + (60 + (h >> 3) % 10) + '%)';
		if (name.charAt(0) === '[')
			return 'hsl(' + (200 + h % 30) + ', 30%, ' + (70 + h % 10) + '%)';
		return 'hsl(' + (h % 50) + ', ' + (70 + h % 20) + '%, ' + (58 + (h >> 3) % 12) + '%)';
	}

	/*
	 * Layout first (which boxes are at least 0.6 px wide, on which row),
	 * then a canvas exactly as tall as the rows drawn, then the paint.
	 */
	function layoutFlame(val, z, W) {
		var boxes = [], chain = [], v, stack, it, kids, cx, i, k, kw;
		for (v = z; v !== 0; v = fl.parent[v])
			chain.unshift(v);
		chain.unshift(0);
		/* ancestors of the zoomed frame: full width, dimmed */
		chain.forEach(function (a, row) {
			if (a !== z)
				boxes.push({ node: a, x: 0, w: W, row: row, dim: true });
		});
		/* the zoomed frame and what it called, widths by the metric */
		stack = [{ v: z, x: 0, w: W }];
		while (stack.length) {
			it = stack.pop();
			boxes.push({ node: it.v, x: it.x, w: it.w, row: fl.depth[it.v], dim: false });
			if (fl.depth[it.v] - fl.depth[z] + 1 >= MAX_ROWS)
				continue;
			kids = fl.kids[it.v].filter(function (q) {
				return val[q] > 0;
			}).sort(function (a, b) {
				return val[b] - val[a];
			});
			cx = it.x;
			for (i = 0; i < kids.length; i++) {
				k = kids[i];
				kw = it.w * val[k] / val[it.v];
				if (kw >= 0.6)
					stack.push({ v: k, x: cx, w: kw });
				cx += kw;
			}
		}
		return { boxes: boxes, chain: chain };
	}

	function drawFlame() {
		var m = fl.metric, val = fl.val[m], z = fl.zoom, c = $('flame');
		var W = c.parentNode.clientWidth || 800, lay, rows = 1, g, ctx, cw;
		if (!(val[z] > 0))
			lay = { boxes: [{ node: 0, x: 0, w: W, row: 1, dim: false }], chain: [0], empty: true };
		else
			lay = layoutFlame(val, z, W);
		lay.boxes.forEach(function (b) {
			if (b.row + 1 > rows)
				rows = b.row + 1;
		});
		g = setupCanvas(c, rows * ROW + 2);
		ctx = g.ctx;
		ctx.clearRect(0, 0, g.w, g.h);
		ctx.font = '12px ui-monospace, "DejaVu Sans Mono", monospace';
		ctx.textBaseline = 'middle';
		cw = ctx.measureText('abcdefghij').width / 10;
		fl.rects = [];
		lay.boxes.forEach(function (b) {
			var y = b.row * ROW, node = b.node, label = fl.names[fl.name[node]], fit;
			ctx.fillStyle = color(node);
			ctx.globalAlpha = b.dim ? 0.55 : 1;
			ctx.fillRect(b.x, y, Math.max(b.w - 1, 0.5), ROW - 1);
			if (node === fl.hover) {
				ctx.strokeStyle = '#1d2330';
				ctx.strokeRect(b.x + 0.5, y + 0.5, Math.max(b.w - 2, 0.5), ROW - 2);
			}
			ctx.globalAlpha = 1;
			fl.rects.push({ node: node, x: b.x, y: y, w: b.w });
			if (b.w > 3 * cw + 6) {
				fit = Math.floor((b.w - 6) / cw);
				if (node === 0)
					label = 'all: ' + (m === 'calls' ? fmtInt(val[0]) + ' calls' : fmtSize(val[0]));
				if (label.length > fit)
					label = label.slice(0, Math.max(fit - 1, 1)) + '\u2026';
				ctx.fillStyle = '#1d2330';
				ctx.fillText(label, b.x + 3, y + ROW / 2);
			}
		});
		if (lay.empty) {
			ctx.fillStyle = '#5d6575';
			ctx.fillText(z === 0 ? 'nothing to show for this cost (it is 0)' : 'this frame has no cost of this kind: zoom out', 6, ROW / 2);
		}
		$('flame-path').textContent = lay.chain.length > 1 ? lay.chain.slice(1).map(function (a) {
			return fl.names[fl.name[a]];
		}).join(' \u203a ') : '';
	}

	/* ---------------------------------------------------------------- */
	/* Tables and leaks                                                  */

	var LISTS = { calls: 'calls', peak: 'peak', leaked: 'leaked', temporary: 'temporary' };

	function numCell(v, isBytes, key) {
		return el('td', { cls: 'n' + (key ? ' key' : ''), 'data-v': String(v), title: isBytes ? fmtInt(v) + ' B' : '' },
			[isBytes ? fmtSize(v) : fmtInt(v)]);
	}

	function tables() {
		var box = $('tables');
		Object.keys(LISTS).forEach(function (key, n) {
			var rows = D.top[key], t;
			t = el('table', { id: 'table-' + key }, [
				el('thead', {}, [el('tr', {}, [
					el('th', { cls: 'n', text: '#' }), el('th', { text: 'function' }), el('th', { text: 'location' }),
					el('th', { cls: 'n', text: 'calls' }), el('th', { cls: 'n', text: 'allocated' }),
					el('th', { cls: 'n', text: 'at peak' }), el('th', { cls: 'n', text: S.attached ? 'not freed' : 'leaked' }),
					el('th', { cls: 'n', text: 'temporary' }), el('th', { cls: 'n', text: 'backtraces' })
				])]),
				el('tbody', {}, rows.map(function (s, i) {
					return el('tr', { id: 'top-' + key + '-' + i, cls: 'sorted' }, [
						el('td', { cls: 'n', text: String(i + 1) }),
						el('td', { cls: 'fn', text: s.function }),
						el('td', { cls: 'loc', text: s.location + (s.module.charAt(0) === '[' ? ' ' + s.module : s.module && s.location.indexOf(s.module) < 0 ? '  (' + s.module + ')' : '') }),
						numCell(s.calls, false, key === 'calls'), numCell(s.bytes, true, false),
						numCell(s.peak, true, key === 'peak'), numCell(s.leaked, true, key === 'leaked'),
						numCell(s.temporary, false, key === 'temporary'), numCell(s.traces, false, false)
					]);
				}))
			]);
			if (!rows.length)
				t = el('p', { id: 'table-' + key, cls: 'empty', text: 'No call site has any cost of this kind.' });
			t.hidden = n !== 0;
			box.appendChild(t);
		});
		Array.prototype.forEach.call(document.querySelectorAll('#table-tabs button'), function (b) {
			b.addEventListener('click', function () {
				var key = b.getAttribute('data-list');
				Array.prototype.forEach.call(document.querySelectorAll('#table-tabs button'), function (o) {
					o.className = o === b ? 'on' : '';
				});
				Object.keys(LISTS).forEach(function (k) {
					$('table-' + k).hidden = k !== key;
				});
			});
		});
	}

	function leaks() {
		var box = $('leaks');
		$('leaks-title').textContent = (S.attached ? 'Not freed at detach' : 'Leaks') + ' (' + fmtSize(S.leaked) + ' in ' + fmtInt(S.leaked_calls) + ' allocations)';
		if (!D.leaks.length) {
			box.appendChild(el('p', { cls: 'empty', text: S.attached ? 'Everything allocated during the session was freed before the detach.' : 'No leaks: everything allocated was freed.' }));
			return;
		}
		D.leaks.forEach(function (s, i) {
			var frames = s.backtrace.map(function (f) {
				return el('li', { cls: f[3] ? 'inl' : '' }, [f[0], f[1] ? el('span', { cls: 'loc', text: '  ' + f[1] }) : null,
					f[2].charAt(0) === '[' ? el('span', { cls: 'xf', text: ' ' + f[2] }) : null, f[3] ? ' (inlined)' : null]);
			});
			if (s.more_frames)
				frames.push(el('li', { cls: 'inl', text: '\u2026 ' + s.more_frames + ' more frames' }));
			box.appendChild(el('div', { cls: 'leak', id: 'leak-' + i }, [
				el('div', { cls: 'head' }, [
					(i + 1) + '. ',
					el('span', { cls: 'bytes', 'data-v': String(s.leaked), text: fmtSize(s.leaked) }),
					' in ',
					el('span', { cls: 'count', 'data-v': String(s.leaked_calls), text: fmtInt(s.leaked_calls) }),
					s.leaked_calls === 1 ? ' allocation from ' : ' allocations from ',
					el('span', { cls: 'fn', text: s.function }),
					s.traces > 1 ? ' (' + s.traces + ' backtraces; the costliest:)' : ''
				]),
				el('ol', {}, frames)
			]));
		});
	}

	/* ---------------------------------------------------------------- */

	summary();
	setupChart();
	flameSetup();
	drawFlame();
	tables();
	leaks();
	var resizeTimer = null;
	window.addEventListener('resize', function () {
		clearTimeout(resizeTimer);
		resizeTimer = setTimeout(function () {
			drawChart();
			drawFlame();
		}, 100);
	});
	if (document.body.getAttribute('data-rendered') !== 'error')
		document.body.setAttribute('data-rendered', 'ok');
}());
