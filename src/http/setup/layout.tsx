import type { Child } from 'hono/jsx';
import type { SignedIn } from '../../setup/signIn.js';

/** The frame of every Setup page: title, sections, who is signed in, sign-out. Readable without CSS. */

export const SECTIONS = [
  { path: '/setup/api', label: 'API & Webhooks' },
  { path: '/setup/objects', label: 'Object Manager' },
  { path: '/setup/projections', label: 'Projections' },
] as const;

export function Document(props: { title: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title} · Setup</title>
        <link rel="stylesheet" href="/setup/assets/setup.css" />
        <script src="/setup/assets/copy.js" defer></script>
      </head>
      <body>{props.children}</body>
    </html>
  );
}

export function Page(props: { title: string; section: string; signedIn: SignedIn; notice?: string | undefined; children: Child }) {
  const { workspace, session, csrfToken } = props.signedIn;
  return (
    <Document title={props.title}>
      <header>
        <p class="brand">
          Setup · <strong>{workspace.name}</strong> <span class="muted">({workspace.slug})</span>
        </p>
        <nav aria-label="Sections">
          <ul>
            {SECTIONS.map((section) => (
              <li>
                <a href={section.path} aria-current={section.path === props.section ? 'page' : undefined}>
                  {section.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <form method="post" action="/setup/sign-out" class="inline signout">
          <span class="muted">Signed in as {session.actor.name}</span> <Csrf token={csrfToken} />
          <button type="submit">Sign out</button>
        </form>
      </header>
      <main>
        <h1>{props.title}</h1>
        {props.notice ? (
          <p class="notice" role="status">
            {props.notice}
          </p>
        ) : null}
        {props.children}
      </main>
    </Document>
  );
}

export function Csrf(props: { token: string }) {
  return <input type="hidden" name="_csrf" value={props.token} />;
}

/** A labelled input with its message next to it when the value was refused. */
export function Field(props: { form: string; name: string; label: string; value?: string | undefined; error?: string | undefined; type?: string; hint?: string; size?: number }) {
  // Ids carry the form's name: one page holds several forms with a "name" field.
  const id = `${props.form}-${props.name}`;
  return (
    <p class={props.error ? 'field invalid' : 'field'}>
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={props.type ?? 'text'}
        value={props.value ?? ''}
        size={props.size}
        aria-invalid={props.error ? 'true' : undefined}
        aria-describedby={props.error ? `${id}-error` : undefined}
      />
      {props.hint ? <small>{props.hint}</small> : null}
      {props.error ? (
        <strong class="error" id={`${id}-error`}>
          {props.error}
        </strong>
      ) : null}
    </p>
  );
}

/** Checkboxes for a list where none ticked means "all". */
export function Choices(props: { name: string; legend: string; options: readonly string[]; chosen: readonly string[]; error?: string | undefined }) {
  return (
    <fieldset class={props.error ? 'invalid' : undefined}>
      <legend>{props.legend} (none ticked: all)</legend>
      {props.options.map((option) => (
        <label class="choice">
          <input type="checkbox" name={props.name} value={option} checked={props.chosen.includes(option)} /> {option}
        </label>
      ))}
      {props.error ? <strong class="error">{props.error}</strong> : null}
    </fieldset>
  );
}

/** A value shown this once (a key, a secret), with a copy button where scripts run. */
export function ShownOnce(props: { id: string; label: string; value: string }) {
  return (
    <div class="once" role="alert">
      <label for={props.id}>{props.label}</label>
      <input id={props.id} type="text" readonly value={props.value} size={60} />
      <button type="button" class="copy" data-copy={props.id} hidden>
        Copy
      </button>
      <p>Copy it now: it is shown this once and cannot be shown again.</p>
    </div>
  );
}

export const time = (iso: string | null) => (iso === null ? '—' : iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
