// The strategy editor in the browser (web.md screen 2). Everything here enhances plain forms that work without it:
// - SortableJS on every list with data-sortable-url: a drop posts the new order, the dragged row (`moved`), the draft
//   version and the preview session; the answer is the re-rendered #workspace (the server decides, the drag does not).
// - SortableJS on the request blocks (data-block-move-url): a drop posts the block and its new neighbour.
// - Refusals (400, 403, 409, 413) are swapped in like successes, so their message and the fresh state show.
// - Focus stays on the control that started a request (or on its row), so keyboard moves can be repeated; after a
//   drag, on the dragged row.
// - The panels the designer opened or closed stay so across the swap; the "Preview" toggle (narrow screens) hides or
//   shows the preview (without JS it is an anchor to it).
(function () {
  "use strict";

  var SWAPPED_ERRORS = [400, 403, 409, 413];
  document.documentElement.classList.add("js-drag");  // drag handles show only where dragging works

  function orderOf(list) {
    return Array.prototype.filter.call(list.children, function (item) {
      return item.dataset && item.dataset.rowId && item.dataset.part !== "held" && item.dataset.pinned !== "true";
    }).map(function (item) { return item.dataset.rowId; });
  }

  function setUpLists(root) {
    if (typeof Sortable === "undefined" || !root.querySelectorAll) { return; }
    var lists = Array.prototype.slice.call(root.querySelectorAll("[data-sortable-url]"));
    if (root.matches && root.matches("[data-sortable-url]")) { lists.push(root); }
    lists.forEach(function (list) {
      if (list.dataset.sortableReady === "true") { return; }
      list.dataset.sortableReady = "true";
      var before = orderOf(list).join("\n");
      Sortable.create(list, {
        handle: ".drag-handle",
        draggable: "[data-row-id]",
        filter: "[data-locked='true']",  // locked rows have no handle either; belt and braces
        preventOnFilter: false,
        forceFallback: true,  // mouse events: the same behaviour with touch, mouse and test drivers
        animation: 120,
        onMove: function (event) {  // nothing lands above a pinned row
          return !(event.related.dataset.pinned === "true" && !event.willInsertAfter);
        },
        onEnd: function (event) {
          var order = orderOf(list);
          if (order.join("\n") === before) { return; }
          var workspace = document.getElementById("workspace");
          list.setAttribute("aria-busy", "true");
          if (event.item.id) { dragged = event.item.id; }
          htmx.ajax("POST", list.dataset.sortableUrl, {
            source: list, target: "#workspace", swap: "outerHTML",
            values: {order: order, moved: event.item.dataset.rowId, version: workspace.dataset.version,
                     session: workspace.dataset.session, model: workspace.dataset.model,
                     generation: workspace.dataset.generation}
          });
        }
      });
    });
  }

  // Request blocks (reference A.11): a dropped block moves before the block now below it (or after the one above).
  function setUpBlockLists(root) {
    if (typeof Sortable === "undefined" || !root.querySelectorAll) { return; }
    Array.prototype.forEach.call(root.querySelectorAll("[data-block-move-url]"), function (list) {
      if (list.dataset.sortableReady === "true") { return; }
      list.dataset.sortableReady = "true";
      Sortable.create(list, {
        handle: ".drag-handle",
        draggable: "[data-block-id]",
        filter: "[data-locked='true']",
        preventOnFilter: false,
        forceFallback: true,
        animation: 120,
        onEnd: function (event) {
          if (event.oldIndex === event.newIndex) { return; }
          var item = event.item, next = item.nextElementSibling, previous = item.previousElementSibling;
          var anchor = next && next.dataset.blockId ? next : previous;
          if (!anchor || !anchor.dataset.blockId) { return; }
          var workspace = document.getElementById("workspace");
          list.setAttribute("aria-busy", "true");
          htmx.ajax("POST", list.dataset.blockMoveUrl, {
            source: list, target: "#workspace", swap: "outerHTML",
            values: {target: item.dataset.blockId, anchor: anchor.dataset.blockId,
                     side: anchor === next ? "before" : "after", version: workspace.dataset.version,
                     session: workspace.dataset.session, model: workspace.dataset.model,
                     generation: workspace.dataset.generation}
          });
        }
      });
    });
  }

  var focusAfter = null, dragged = null, panelsOpen = null, previewHidden = false;

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest && event.target.closest("[data-preview-toggle]");
    if (!toggle) { return; }
    var workspace = document.getElementById("workspace");
    previewHidden = !workspace.classList.contains("preview-hidden");
    workspace.classList.toggle("preview-hidden", previewHidden);
    toggle.setAttribute("aria-expanded", previewHidden ? "false" : "true");
    event.preventDefault();
  });

  document.addEventListener("htmx:beforeRequest", function () {
    panelsOpen = {};
    Array.prototype.forEach.call(document.querySelectorAll("details.panel[id]"), function (panel) {
      panelsOpen[panel.id] = panel.open;
    });
    var active = document.activeElement;
    focusAfter = null;
    if (active && active !== document.body && active.id) {
      var row = active.closest("[data-row-id]");
      focusAfter = {id: active.id, row: row ? row.id : null};
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    var workspace = document.getElementById("workspace");
    if (workspace) { workspace.classList.toggle("preview-hidden", previewHidden); }
    if (panelsOpen) {
      Object.keys(panelsOpen).forEach(function (id) {
        var panel = document.getElementById(id);
        if (panel && panelsOpen[id]) { panel.open = true; }  // the server opens the panel of the write
      });
      panelsOpen = null;
    }
    if (dragged) {
      var row = document.getElementById(dragged);
      dragged = null;
      if (row) { row.focus(); return; }
    }
    if (!focusAfter) { return; }
    var wanted = document.getElementById(focusAfter.id);
    if (wanted && !wanted.disabled) {
      if (document.activeElement !== wanted) { wanted.focus(); }
    } else if (focusAfter.row) {  // e.g. "move up" is disabled once the row reached the top
      var row = document.getElementById(focusAfter.row);
      if (row) { (row.querySelector("[data-move]:not([disabled])") || row).focus(); }
    }
    focusAfter = null;
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    if (SWAPPED_ERRORS.indexOf(event.detail.xhr.status) !== -1) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  document.addEventListener("htmx:responseError", function (event) {
    var status = document.getElementById("editor-status");
    if (!status || SWAPPED_ERRORS.indexOf(event.detail.xhr.status) !== -1) { return; }
    var alert = document.createElement("div");
    alert.className = "alert error";
    alert.setAttribute("role", "alert");
    alert.dataset.code = "HTTP_" + event.detail.xhr.status;
    alert.textContent = (status.dataset.failed || "The server could not answer") + " (HTTP " + event.detail.xhr.status + ")";
    status.replaceChildren(alert);
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (window.htmx) {
      htmx.onLoad(setUpLists);
      htmx.onLoad(setUpBlockLists);
    } else {
      setUpLists(document);
      setUpBlockLists(document);
    }
  });
})();
