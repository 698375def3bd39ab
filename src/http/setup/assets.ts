import type { Hono } from 'hono';

/** The page's one stylesheet and one small script (the copy buttons), served by the service itself. */

const CSS = `
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header{display:flex;flex-wrap:wrap;gap:1rem;align-items:center;padding:.6rem 1.2rem;background:#1f3a5f;color:#fff}
header a{color:#fff}header .muted{color:#c9d4e3}
nav ul{display:flex;gap:1rem;list-style:none;margin:0;padding:0}
nav a[aria-current=page]{font-weight:700;text-decoration:none;border-bottom:2px solid #fff}
.brand{margin:0}.signout{margin-left:auto}
main{max-width:70rem;margin:0 auto;padding:1rem 1.2rem 3rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d5dae1}
table{border-collapse:collapse;width:100%;background:#fff;margin:.5rem 0 1rem}
th,td{border:1px solid #d5dae1;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#eef1f5}
form{margin:.4rem 0}form.inline{display:inline}
form.card,fieldset{background:#fff;border:1px solid #d5dae1;padding:.6rem 1rem;margin:.5rem 0}
.field label{display:block;font-weight:600}
.field input{padding:.25rem}
.choice{margin-right:1rem}
.invalid input{border:2px solid #b3261e}
.error{display:block;color:#b3261e}
.notice{background:#e5f4ea;border:1px solid #9cd0ab;padding:.5rem}
.once{background:#fff8e1;border:1px solid #e0c36a;padding:.6rem}
.once input{font-family:monospace}
.muted{color:#5c6670}.off{color:#b3261e}
button{padding:.25rem .7rem;cursor:pointer}
button.danger{background:#b3261e;color:#fff;border:1px solid #8c1d18}
pre{background:#fff;border:1px solid #d5dae1;padding:.6rem;overflow:auto}
:focus-visible{outline:3px solid #f0a500;outline-offset:1px}
`;

// Copy buttons stay hidden where scripts do not run: the value can be selected in its field.
const COPY_JS = `document.querySelectorAll('button[data-copy]').forEach(function (button) {
  button.hidden = false;
  button.addEventListener('click', function () {
    var field = document.getElementById(button.dataset.copy);
    field.select();
    (navigator.clipboard ? navigator.clipboard.writeText(field.value) : Promise.reject()).then(
      function () { button.textContent = 'Copied'; },
      function () { document.execCommand('copy'); button.textContent = 'Copied'; }
    );
  });
});
`;

export function assetRoutes(app: Hono<any>): void {
  app.get('/assets/setup.css', (c) => c.body(CSS, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }));
  app.get('/assets/copy.js', (c) => c.body(COPY_JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }));
}
