// The tour's workspace: what the tour changes, saved and put back.
import { $, setTouring, state, view } from './state.js';
import { deviceLabel, editor, setOverrides } from './controls.js';
import { refreshStale } from './stale.js';
import { busy } from './errors.js';
import { showResults } from './beforeafter.js';
import { setTab } from './tabs.js';

// ---- the tour's workspace ---------------------------------------------------
// Everything the tour changes: the editor text, the sidebar's and the Goodput
// panel's settings, the URL state and the view. begin() saves them, end()
// (the tour finished or was closed) waits for the tour's last request and
// puts them back, with localStorage as it was.
const CONTROLS = ['#example', '#loop', '#residuals', '#device', '#batch', '#mode', '#res-b', '#gp-frontend', '#gp-steps'];
export function tourWorkspace() {
  let saved = null;
  return {
    begin() {
      saved = {
        text: editor.text, stored: localStorage.getItem('hloscope.model'),
        controls: CONTROLS.map((c) => $(c).value), state: { ...state },
        view: { ...view, sig: { ...view.sig }, goodput: { ...view.goodput } },
        goodput: $('#goodput').innerHTML, gpLinks: $('#gp-links').innerHTML,
      };
      setTouring(true);
      // The tour's figures do not depend on the user's settings: it starts
      // from the models' own (it sets what its steps need).
      setOverrides({});
      $('#gp-frontend').value = 'hloscope';
      $('#gp-steps').value = 10;
    },
    async end() {
      if (!saved) return;
      while (busy) await new Promise((ok) => setTimeout(ok, 50));
      const w = saved;
      saved = null;
      editor.text = w.text;
      CONTROLS.forEach((c, k) => { $(c).value = w.controls[k]; });
      $('#res-b').classList.toggle('hidden', w.state.mode !== 'residuals');
      deviceLabel();
      for (const k of Object.keys(state)) state[k] = w.state[k];
      Object.assign(view, w.view);
      $('#goodput').innerHTML = w.goodput;
      $('#gp-links').innerHTML = w.gpLinks;
      if (w.stored == null) localStorage.removeItem('hloscope.model');
      else localStorage.setItem('hloscope.model', w.stored);
      setTouring(false);
      setTab(state.tab); // first: graphs are fitted to a visible pane
      if (state.b && (state.a || view.failA)) await showResults();
      else {
        for (const sel of ['#summary', '#panes', '#graph-tools', '#oom', '#details']) $(sel).classList.add('hidden');
        $('#empty').classList.remove('hidden');
      }
      refreshStale();
    },
  };
}
