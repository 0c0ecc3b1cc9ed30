// OpenWorkflow dashboard: the little script the server-rendered pages
// use. No build step, no library. It keeps relative times current,
// opens confirmation dialogs, checks JSON before a form is sent, swaps in
// the sections a live view (Server-Sent Events) sends, and follows a
// run's streams.
(() => {
  'use strict';

  // Relative times and running durations, as the server renders them
  // (format.go: relTime, fmtDuration).
  function rel(t, now) {
    let d = now - t;
    const future = d < 0;
    if (future) d = -d;
    let s;
    if (d < 1000) return future ? 'now' : 'just now';
    if (d < 60e3) s = Math.floor(d / 1e3) + 's';
    else if (d < 3600e3) s = Math.floor(d / 60e3) + 'm';
    else if (d < 48 * 3600e3) s = Math.floor(d / 3600e3) + 'h';
    else if (d < 30 * 86400e3) s = Math.floor(d / 86400e3) + 'd';
    else return new Date(t).toISOString().slice(0, 10);
    return future ? 'in ' + s : s + ' ago';
  }

  function two(d, big, bigName, small, smallName) {
    const n = Math.floor(d / big);
    const rest = Math.floor((d % big) / small);
    return rest === 0 ? n + bigName : n + bigName + ' ' + rest + smallName;
  }

  function dur(d) {
    if (d < 0) d = -d;
    if (d < 1) return '<1ms';
    if (d < 1e3) return Math.floor(d) + 'ms';
    if (d < 10e3) return (d / 1e3).toFixed(1).replace(/\.0$/, '') + 's';
    if (d < 60e3) return Math.floor(d / 1e3) + 's';
    if (d < 3600e3) return two(d, 60e3, 'm', 1e3, 's');
    if (d < 86400e3) return two(d, 3600e3, 'h', 60e3, 'm');
    return two(d, 86400e3, 'd', 3600e3, 'h');
  }

  function tick() {
    const now = Date.now();
    for (const el of document.querySelectorAll('time[data-rel]')) {
      const t = Date.parse(el.getAttribute('datetime'));
      if (!isNaN(t)) {
        el.textContent = rel(t, now);
        if (!el.dataset.local) {
          el.title = new Date(t).toLocaleString() + ' (' + el.title + ')';
          el.dataset.local = '1';
        }
      }
    }
    for (const el of document.querySelectorAll('[data-since]')) {
      const t = Date.parse(el.dataset.since);
      if (!isNaN(t)) el.textContent = dur(now - t);
    }
  }

  // The status line read by screen readers and shown at the corner.
  function say(msg) {
    const el = document.getElementById('live-status');
    if (el) el.textContent = msg;
  }

  // Dialogs, copy buttons.
  document.addEventListener('click', (e) => {
    const opener = e.target.closest('[data-open]');
    if (opener) {
      const dlg = document.getElementById(opener.dataset.open);
      if (!dlg) return;
      if (opener.dataset.token) {
        const tok = dlg.querySelector('[name=token]');
        if (tok) tok.value = opener.dataset.token;
      }
      dlg.showModal();
      return;
    }
    const closer = e.target.closest('[data-close]');
    if (closer) {
      closer.closest('dialog').close();
      return;
    }
    const copy = e.target.closest('[data-copy]');
    if (copy) {
      const src = document.querySelector(copy.dataset.copy);
      if (src && navigator.clipboard) {
        navigator.clipboard.writeText(src.textContent).then(() => {
          const was = copy.textContent;
          copy.textContent = 'Copied';
          setTimeout(() => { copy.textContent = was; }, 1200);
        });
      }
    }
  });

  // A form with data-confirm asks first, in #dlg-confirm, showing what
  // it will send.
  document.addEventListener('submit', (e) => {
    const form = e.target;
    if (form.matches('form[data-confirm]') && !form.dataset.confirmed) {
      e.preventDefault();
      if (!form.reportValidity()) return;
      const dlg = document.getElementById('dlg-confirm');
      dlg.querySelector('.dlg-message').textContent = form.dataset.confirm;
      const summary = dlg.querySelector('.dlg-summary');
      summary.replaceChildren();
      for (const el of form.querySelectorAll('input[name], textarea[name], select[name]')) {
        if (el.type === 'hidden' || el.value.trim() === '') continue;
        const label = form.querySelector('label[for="' + el.id + '"]');
        const row = document.createElement('div');
        const dt = document.createElement('dt');
        const dd = document.createElement('dd');
        dt.textContent = label ? label.textContent.replace(/\s*\(.*\)\s*$/, '') : el.name;
        dd.textContent = el.value.length > 300 ? el.value.slice(0, 300) + '…' : el.value;
        dd.className = 'mono';
        row.append(dt, dd);
        summary.append(row);
      }
      dlg.returnValue = '';
      dlg.addEventListener('close', () => {
        if (dlg.returnValue === 'ok') {
          form.dataset.confirmed = '1';
          form.requestSubmit();
        }
      }, { once: true });
      dlg.showModal();
      return;
    }
    // Sent: no second click sends it twice.
    if (!e.defaultPrevented && form.method === 'post') {
      setTimeout(() => {
        for (const b of form.querySelectorAll('button[type=submit]')) b.disabled = true;
      }, 0);
    }
  });

  // Checks as you type: JSON fields (data-json, "optional" allows empty)
  // and time fields (data-when: a duration from now or an RFC 3339 time).
  function checkJSON(el) {
    const v = el.value.trim();
    let msg = '';
    if (v !== '' || el.dataset.json !== 'optional') {
      try {
        JSON.parse(v);
      } catch (err) {
        msg = 'Not valid JSON: ' + err.message;
      }
    }
    report(el, msg);
  }

  const durationRe = /^(\d+d)?((\d+(\.\d+)?(ns|us|µs|ms|s|m|h))*)$/;
  function checkWhen(el) {
    const v = el.value.trim();
    let msg = '';
    if (v !== '' && !durationRe.test(v) && !(/^\d{4}-\d\d-\d\dT/.test(v) && !isNaN(Date.parse(v)))) {
      msg = 'Give a duration from now (90s, 15m, 1h30m, 2d) or a time such as 2026-01-02T15:04:05Z.';
    }
    report(el, msg);
  }

  function report(el, msg) {
    el.setCustomValidity(msg);
    if (msg) el.setAttribute('aria-invalid', 'true');
    else el.removeAttribute('aria-invalid');
    const out = document.getElementById(el.id + '-error');
    if (out) out.textContent = msg;
  }

  document.addEventListener('input', (e) => {
    if (e.target.matches('[data-json]')) checkJSON(e.target);
    if (e.target.matches('[data-when]')) checkWhen(e.target);
  });

  // The start form's list of registered workflows fills in the chosen
  // one's name, version and example input.
  document.addEventListener('change', (e) => {
    if (!e.target.matches('select[data-registered]')) return;
    const opt = e.target.selectedOptions[0];
    if (!opt || !opt.dataset.name) return;
    const form = e.target.form;
    form.elements.workflow.value = opt.dataset.name;
    form.elements.version.value = opt.dataset.version || '';
    if (opt.dataset.example) {
      form.elements.input.value = opt.dataset.example;
      checkJSON(form.elements.input);
    }
  });

  // Live sections: replace each element by id with the server's HTML,
  // keeping what the reader has open or focused, and the elements marked
  // data-preserve (streams being followed).
  function apply(sections) {
    for (const [id, html] of Object.entries(sections)) {
      const old = document.getElementById(id);
      if (!old) continue;
      const tpl = document.createElement('template');
      tpl.innerHTML = html.trim();
      const neu = tpl.content.firstElementChild;
      if (!neu) continue;
      const open = new Set();
      for (const d of old.querySelectorAll('details[open]')) open.add(detailsKey(d));
      const focused = old.contains(document.activeElement) ? document.activeElement : null;
      const focusKey = focused && (focused.id || focused.getAttribute('href'));
      for (const keep of neu.querySelectorAll('[data-preserve][id]')) {
        const cur = document.getElementById(keep.id);
        if (cur) keep.replaceWith(cur);
      }
      for (const d of neu.querySelectorAll('details')) {
        if (open.has(detailsKey(d))) d.open = true;
      }
      old.replaceWith(neu);
      if (focusKey) {
        const again = [...neu.querySelectorAll('[id], [href]')].find((el) => el.id === focusKey || el.getAttribute('href') === focusKey);
        if (again) again.focus({ preventScroll: true });
      }
    }
    tick();
    followStreams();
  }

  function detailsKey(d) {
    const owner = d.closest('[id]');
    const summary = d.querySelector('summary');
    return (owner ? owner.id : '') + ':' + (summary ? summary.textContent : '');
  }

  let live = null;
  let ended = false;
  function connect() {
    const main = document.getElementById('main');
    const url = main && main.dataset.live;
    if (!url || live || ended) return;
    live = new EventSource(url);
    live.addEventListener('update', (e) => {
      apply(JSON.parse(e.data));
      say('');
    });
    live.addEventListener('problem', (e) => say(JSON.parse(e.data).message));
    live.addEventListener('end', (e) => {
      live.close();
      live = null;
      ended = true;
      let said = '';
      try { said = JSON.parse(e.data).message || ''; } catch (_) { /* a run's end carries no message */ }
      say(said || 'The run finished: live updates stopped.');
      setTimeout(() => say(''), 5000);
    });
    live.onerror = () => {
      if (live && live.readyState === EventSource.CONNECTING) say('Live updates interrupted; reconnecting…');
    };
  }

  // Paused while the tab is hidden, as reading costs the server.
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) {
      if (live) live.close();
      live = null;
    } else {
      connect();
    }
  });

  // Streams: each <pre data-stream> follows its run's stream.
  function followStreams() {
    for (const pre of document.querySelectorAll('pre[data-stream]:not([data-following])')) {
      pre.dataset.following = '1';
      const es = new EventSource(pre.dataset.stream);
      es.addEventListener('chunk', (e) => {
        const c = JSON.parse(e.data);
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.append(c.text !== undefined ? c.text : '[' + atob(c.data).length + ' bytes of binary data]\n');
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      });
      es.addEventListener('end', () => {
        es.close();
        pre.dataset.ended = '1';
      });
      es.addEventListener('error', (e) => {
        if (e.data) {
          pre.append('\n[' + JSON.parse(e.data).message + ']');
          es.close();
        }
      });
    }
  }

  // Counts not rendered with the page (counting is slow on big
  // namespaces) are fetched after it loaded.
  function loadCounts() {
    const el = document.querySelector('#counts[data-counts]');
    if (!el) return;
    fetch(el.dataset.counts, { headers: { Accept: 'text/html' } })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(r.statusText))))
      .then((html) => apply({ counts: html }))
      .catch(() => {});
  }

  // Keys: "/" goes to the run search; j and k move through the rows of
  // a list.
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t.matches && t.matches('input, textarea, select, [contenteditable]')) return;
    if (e.key === '/') {
      const q = document.getElementById('q');
      if (q) {
        e.preventDefault();
        q.focus();
      }
    } else if (e.key === 'j' || e.key === 'k') {
      const links = [...document.querySelectorAll('table[data-rows] a.run-link')];
      if (!links.length) return;
      const i = links.indexOf(document.activeElement);
      const next = e.key === 'j' ? Math.min(i + 1, links.length - 1) : Math.max(i - 1, 0);
      links[i < 0 ? 0 : next].focus();
      e.preventDefault();
    }
  });

  // A whole row of a list opens its run on click (the link in it is the
  // keyboard's way).
  document.addEventListener('click', (e) => {
    const row = e.target.closest('table[data-rows] tbody tr');
    if (!row || e.target.closest('a, button') || window.getSelection().toString()) return;
    const link = row.querySelector('a.run-link');
    if (link) window.location.href = link.href;
  });

  function init() {
    // A form that failed on the server opens again with its values and
    // the problem.
    const again = document.querySelector('dialog[data-autoopen]');
    if (again) again.showModal();
    tick();
    setInterval(tick, 1000);
    followStreams();
    loadCounts();
    connect();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
