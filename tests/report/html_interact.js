/* tests/report/html_interact.js - appended to a copy of the HTML report by html.test: uses the page */
/* SPDX-License-Identifier: MIT */
/*
 * Hovers and clicks the flame graph, the chart, the metric buttons and the
 * table tabs as a person would (synthetic mouse events at canvas
 * coordinates), and writes what happened into <body data-interact>: "ok",
 * or what went wrong. An exception shows as the page's own error
 * (data-rendered="error").
 */
(function () {
	'use strict';
	var bad = [];
	function mouse(el, type, x, y) {
		var r = el.getBoundingClientRect();
		el.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: r.left + x, clientY: r.top + y }));
	}
	function $(id) {
		return document.getElementById(id);
	}
	var flame = $('flame'), chart = $('chart'), ROW = 18;

	/* hover the root: the tip names it with its calls */
	mouse(flame, 'mousemove', 5, ROW / 2);
	if ($('flame-tip').hidden || $('flame-tip').textContent.indexOf('calls ') < 0)
		bad.push('hovering the flame root shows no tip with calls: ' + $('flame-tip').textContent);
	/* click a frame two rows down: zoomed, the path names it */
	mouse(flame, 'click', 5, 2 * ROW + ROW / 2);
	if (!$('flame-path').textContent)
		bad.push('clicking a frame did not zoom (no path shown)');
	var zoomedPath = $('flame-path').textContent;
	/* every metric draws; then zoom out */
	Array.prototype.forEach.call(document.querySelectorAll('#flame-section button[data-metric]'), function (b) {
		b.click();
		if (b.className !== 'on')
			bad.push('metric button ' + b.getAttribute('data-metric') + ' not selected after a click');
	});
	$('flame-reset').click();
	if ($('flame-path').textContent)
		bad.push('zoom out left the path ' + $('flame-path').textContent);
	/* the chart's tip at its middle: time and heap */
	mouse(chart, 'mousemove', chart.clientWidth / 2, 100);
	if ($('chart-tip').hidden || !/time|event/.test($('chart-tip').textContent) || $('chart-tip').textContent.indexOf('heap ') < 0)
		bad.push('hovering the chart shows no time and heap: ' + $('chart-tip').textContent);
	/* table tabs show one table at a time */
	['leaked', 'peak', 'temporary', 'calls'].forEach(function (key) {
		document.querySelector('#table-tabs button[data-list="' + key + '"]').click();
		['calls', 'peak', 'leaked', 'temporary'].forEach(function (k) {
			if ($('table-' + k).hidden !== (k !== key))
				bad.push('tab ' + key + ': table ' + k + (k === key ? ' hidden' : ' shown'));
		});
	});
	document.body.setAttribute('data-zoomed-path', zoomedPath);
	document.body.setAttribute('data-interact', bad.length ? 'fail: ' + bad.join('; ') : 'ok');
}());
