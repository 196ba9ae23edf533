// ESLint for the framework-free UI (ui/): plain browser ES modules, no bundler. `make lint` runs
// it with the ESLint that scripts/install-peers.sh installs. Besides the usual mistakes it keeps
// three of ARCHITECTURE.md's rules: nothing goes in as HTML, text goes in only through dom.js
// (setText/setTitle/el, which show hidden characters as ⟨U+XXXX⟩), and only api.js touches
// window.__TAURI__.

const browser = Object.fromEntries(
  ['window', 'document', 'navigator', 'console', 'setTimeout', 'clearTimeout', 'setInterval',
    'clearInterval', 'requestAnimationFrame', 'Node', 'Event', 'URL', 'Date', 'JSON', 'Math',
    'Number', 'String', 'Object', 'Array', 'Set', 'Map', 'Promise', 'Error']
    .map((g) => [g, 'readonly']),
);

const htmlSinks = ['innerHTML', 'outerHTML', 'insertAdjacentHTML'].map((property) => ({
  property,
  message: 'Text from servers and clients goes in with textContent or el(), never as HTML.',
}));

// Text set any other way would skip dom.js's revealing of hidden characters.
const textSinks = ['textContent', 'innerText', 'nodeValue', 'title'].map((p) => ({
  selector: `AssignmentExpression[left.property.name='${p}']`,
  message: `Set ${p} through dom.js (setText, setTitle or el()): it shows hidden characters as ⟨U+XXXX⟩.`,
})).concat([{
  selector: "CallExpression[callee.property.name='createTextNode']",
  message: 'Make text nodes through el() (dom.js): it shows hidden characters as ⟨U+XXXX⟩.',
}]);

export default [
  {
    files: ['ui/**/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: browser },
    rules: {
      'no-undef': 'error',
      'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none' }],
      'no-unreachable': 'error',
      'no-dupe-keys': 'error',
      'no-redeclare': 'error',
      'no-self-assign': 'error',
      'no-constant-condition': 'error',
      'no-empty': ['error', { allowEmptyCatch: true }],
      eqeqeq: ['error', 'always'],
      'no-var': 'error',
      'prefer-const': 'error',
      'no-eval': 'error',
      'no-implied-eval': 'error',
      'no-new-func': 'error',
      'no-restricted-properties': ['error', ...htmlSinks,
        { object: 'window', property: '__TAURI__', message: 'Only ui/api.js talks to the app.' },
        { object: 'document', property: 'write', message: 'Build nodes with el().' }],
      'no-restricted-syntax': ['error', ...textSinks],
    },
  },
  {
    files: ['ui/dom.js'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['ui/api.js'],
    rules: { 'no-restricted-properties': ['error', ...htmlSinks] },
  },
];
