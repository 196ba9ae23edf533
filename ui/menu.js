// A small menu behind a button (WAI-ARIA menu button): Enter, Space or ArrowDown open it on its
// first item, the arrows move, Home/End jump, Escape closes it back on its button, Tab or a click
// elsewhere closes it. Items are buttons with `role=menuitem`; choosing one closes the menu and
// calls `onChoose` with the item.

import { el } from './dom.js';

/** A menu button labelled `label` (what a screen reader says) over `items`; returns the pair's
 * wrapper, to be placed where the button goes. */
export function menuButton(label, items, onChoose) {
  const menu = el('div', { class: 'menu', role: 'menu', hidden: true, 'aria-label': label }, ...items);
  const button = el('button', {
    type: 'button', class: 'menu-button', 'aria-haspopup': 'menu', 'aria-expanded': 'false', 'aria-label': label,
  }, '⋯');
  for (const item of items) {
    item.setAttribute('role', 'menuitem');
    item.tabIndex = -1;
  }
  const enabled = () => items.filter((i) => !i.hidden && !i.disabled);
  const close = (refocus) => {
    menu.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    if (refocus) button.focus();
  };
  const open = (at) => {
    menu.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    const list = enabled();
    (at === 'last' ? list[list.length - 1] : list[0])?.focus();
  };
  button.addEventListener('click', () => (menu.hidden ? open('first') : close(false)));
  button.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown' || e.key === 'Enter' || e.key === ' ') { e.preventDefault(); open('first'); }
    if (e.key === 'ArrowUp') { e.preventDefault(); open('last'); }
  });
  menu.addEventListener('keydown', (e) => {
    const list = enabled();
    const i = list.indexOf(document.activeElement);
    const go = (n) => { e.preventDefault(); list[(n + list.length) % list.length]?.focus(); };
    if (e.key === 'ArrowDown') go(i + 1);
    else if (e.key === 'ArrowUp') go(i - 1);
    else if (e.key === 'Home') go(0);
    else if (e.key === 'End') go(list.length - 1);
    else if (e.key === 'Escape') { e.preventDefault(); close(true); }
    else if (e.key === 'Tab') close(false);
  });
  menu.addEventListener('click', (e) => {
    const item = e.target.closest('[role=menuitem]');
    if (!item || item.disabled) return;
    close(true);
    onChoose(item);
  });
  document.addEventListener('click', (e) => {
    if (!menu.hidden && !menu.contains(e.target) && e.target !== button) close(false);
  });
  return el('span', { class: 'menu-wrap' }, button, menu);
}
