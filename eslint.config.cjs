// ESLint's rules for the project's JavaScript: the theme's scripts (run in browsers and Web
// Workers, from file:// too, so plain scripts with no modules), the VS Code extension (CommonJS in
// the extension host; its webview script in the browser) and the Node tests. The tests run
// it (tests/integration/test_js_lint.py) with the pinned packages of tests/tools.py.
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  // theme/serve/state.js is a Jinja template that renders to JavaScript, not JavaScript itself.
  // editors/vscode/engine/ holds the site's files, copied there by `make vsix`.
  {
    ignores: ["theme/static/vendor/**", "theme/serve/state.js", "site/**", "dist/**", ".cache/**",
              "editors/vscode/engine/**", "editors/vscode/.build/**"],
  },
  js.configs.recommended,
  {
    files: ["theme/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser, ...globals.worker, MiniSearch: "readonly" },
    },
  },
  {
    files: ["editors/vscode/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: globals.node },
  },
  {
    files: ["editors/vscode/media/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser, acquireVsCodeApi: "readonly" },
    },
  },
  {
    files: ["tests/js/**/*.js", "theme/check/**/*.js", "eslint.config.cjs"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs", globals: globals.node },
  },
];
