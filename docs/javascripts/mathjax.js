// Equations from pymdownx.arithmatex (class "arithmatex") and from the tutorials'
// markdown cells (mkdocs-jupyter's "jp-RenderedMarkdown", written with $ and $$).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown",
  },
};
