// MindRune's dashboard: progressive enhancement only. Every page works without this file
// except Copy, which needs the clipboard: View and Download are plain HTML.
(function () {
  'use strict';

  // Lets the stylesheet hide the switch's Save button once the switch saves by itself.
  document.documentElement.classList.add('js');

  function say(button, text) {
    var original = button.getAttribute('data-label') || button.textContent;
    button.setAttribute('data-label', original);
    button.textContent = text;
    window.setTimeout(function () { button.textContent = original; }, 2500);
  }

  // Without the clipboard API (an old browser, or a page not served securely), the code is
  // opened and selected so the owner can copy it with one key press.
  function selectForCopy(button, source) {
    var details = source.closest('details');
    if (details) { details.open = true; }
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    var copied = false;
    try { copied = document.execCommand('copy'); } catch (e) { copied = false; }
    say(button, copied ? 'Copied' : 'Selected: press Ctrl+C');
  }

  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.hidden = false;
    button.addEventListener('click', function () {
      var source = document.getElementById(button.getAttribute('data-copy'));
      if (!source) { return; }
      var text = source.textContent;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(
          function () { say(button, 'Copied'); },
          function () { selectForCopy(button, source); }
        );
      } else {
        selectForCopy(button, source);
      }
    });
  });

  // The Eager family sharing switch saves as soon as it is flipped.
  document.querySelectorAll('form[data-autosubmit] input[type=checkbox]').forEach(function (box) {
    box.addEventListener('change', function () {
      if (box.form.requestSubmit) { box.form.requestSubmit(); } else { box.form.submit(); }
    });
  });
})();
