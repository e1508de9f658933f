/* Inlined into OHIF's index.html by serve.py. Read-only instrumentation for
   scenario conditions: a cornerstone viewport element that has drawn an image
   carries data-clinigym-image="<index of that image in its stack>", set at the
   first draw after the image arrived, so a DOM condition can wait for pixels,
   not only for the overlay text (which appears earlier). Cornerstone's events
   do not bubble: listen in the capture phase. */
(function () {
  var pending = new WeakMap();
  document.addEventListener('CORNERSTONE_STACK_NEW_IMAGE', function (event) {
    var detail = event.detail || {};
    pending.set(event.target, detail.imageIdIndex);
  }, true);
  document.addEventListener('CORNERSTONE_IMAGE_RENDERED', function (event) {
    var el = event.target;
    if (el && el.setAttribute && pending.has(el)) {
      el.setAttribute('data-clinigym-image', String(pending.get(el)));
      pending.delete(el);
    }
  }, true);
})();

/* The page's own work still under way, read by the settle rule (settle.page_busy):
   a request in flight, a frame requested, an animation running (Web Animations: the CSS
   ones end at once, clinigym.css), or a one-shot timer due within `horizonMs`.
   OHIF pauses drawing while it waits for the server (0.2-0.3 s between the frames of
   a study) and draws again from timers (500 and 600 ms after a study has loaded):
   pauses in which Chromium sleeps, so the CPU tells nothing. setInterval is left out:
   a periodic timer is always due soon. */
(function () {
  var inflight = 0, frames = new Set(), timers = new Map();
  var nativeFetch = window.fetch, nativeSend = XMLHttpRequest.prototype.send;
  var nativeSetTimeout = window.setTimeout, nativeClearTimeout = window.clearTimeout;
  var nativeRaf = window.requestAnimationFrame, nativeCaf = window.cancelAnimationFrame;
  window.fetch = function () {
    inflight++;
    return nativeFetch.apply(this, arguments).finally(function () { inflight--; });
  };
  XMLHttpRequest.prototype.send = function () {
    inflight++;
    this.addEventListener('loadend', function () { inflight--; }, {once: true});
    try {
      return nativeSend.apply(this, arguments);
    } catch (e) {
      inflight--;   // never sent: no loadend will come
      throw e;
    }
  };
  window.setTimeout = function (fn, delay) {
    if (typeof fn !== 'function') return nativeSetTimeout.apply(window, arguments);
    var args = Array.prototype.slice.call(arguments, 2), id;
    id = nativeSetTimeout.call(window, function () {
      timers.delete(id);
      return fn.apply(this, args);
    }, delay);
    timers.set(id, performance.now() + (Number(delay) || 0));
    return id;
  };
  window.clearTimeout = function (id) { timers.delete(id); return nativeClearTimeout.call(window, id); };
  window.requestAnimationFrame = function (fn) {
    var id = nativeRaf.call(window, function (t) { frames.delete(id); return fn(t); });
    frames.add(id);
    return id;
  };
  window.cancelAnimationFrame = function (id) { frames.delete(id); return nativeCaf.call(window, id); };
  // An animation that ends (an infinite one, a spinner, never settles).
  function animating(a) {
    return a.playState === 'running' && a.effect && isFinite(a.effect.getComputedTiming().endTime);
  }
  window.clinigymBusy = function (horizonMs) {
    if (inflight > 0 || frames.size > 0 || document.getAnimations().some(animating)) return true;
    var until = performance.now() + horizonMs, soon = false;
    timers.forEach(function (due) { soon = soon || due <= until; });
    return soon;
  };
})();
