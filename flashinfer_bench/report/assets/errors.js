// Runs first: anything that goes wrong while the report renders is shown on the page and recorded in the
// self-check marker (which the test suite reads from headless Chromium).
(function () {
  "use strict";
  var errors = [];
  window.fibErrors = errors;
  function show() {
    var box = document.getElementById("fib-errors");
    if (box) {
      box.style.display = "block";
      box.textContent = "The report did not render completely:\n" + errors.join("\n");
    }
    var check = document.getElementById("fib-selfcheck");
    if (check) {
      check.setAttribute("data-status", "error");
      check.setAttribute("data-errors", errors.join(" | "));
    }
  }
  function record(message) {
    errors.push(String(message));
    show();
  }
  var consoleError = console.error;
  // For errors the report catches itself: recorded, shown, and logged like any other error.
  window.fibReportError = function (message) {
    record(message);
    consoleError.call(console, "flashinfer-bench report: " + message);
  };
  // Uncaught errors: the browser logs them already.
  window.addEventListener("error", function (event) {
    record((event.message || "error") + (event.lineno ? " (line " + event.lineno + ")" : ""));
  });
  console.error = function () {
    record(Array.prototype.join.call(arguments, " "));
    return consoleError.apply(console, arguments);
  };
})();
