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
    // Text in an element with a class is skipped unless the element has one of
    // the classes below; text in elements without one (the <p> of a notebook's
    // markdown cell) is read, so the pattern must not match an empty class.
    ignoreHtmlClass: ".+",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown",
  },
};
