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
