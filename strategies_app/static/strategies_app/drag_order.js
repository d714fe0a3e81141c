// Drag ordering for admin tabular inlines: rows of a table marked data-drag-order="<field>" can be dragged; after a
// drop every row's <field> input is renumbered in the new order (0, 1, 2, ...). The number inputs stay editable,
// which is the keyboard alternative to dragging.
(function () {
  "use strict";
  function renumber(tbody, field) {
    var index = 0;
    tbody.querySelectorAll("tr.form-row:not(.empty-form)").forEach(function (row) {
      var input = row.querySelector('input[name$="-' + field + '"]');
      if (input) { input.value = index; index += 1; }
    });
  }
  function setUp(group) {
    var field = group.dataset.dragOrder;
    var tbody = group.querySelector("tbody");
    if (!tbody) { return; }
    var dragged = null;
    tbody.querySelectorAll("tr.form-row:not(.empty-form)").forEach(function (row) {
      row.draggable = true;
      row.style.cursor = "move";
      row.addEventListener("dragstart", function () { dragged = row; row.style.opacity = "0.5"; });
      row.addEventListener("dragend", function () { row.style.opacity = ""; dragged = null; });
      row.addEventListener("dragover", function (event) { event.preventDefault(); });
      row.addEventListener("drop", function (event) {
        event.preventDefault();
        if (!dragged || dragged === row) { return; }
        var after = event.clientY > row.getBoundingClientRect().top + row.offsetHeight / 2;
        tbody.insertBefore(dragged, after ? row.nextSibling : row);
        renumber(tbody, field);
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-drag-order]").forEach(setUp);
  });
})();
