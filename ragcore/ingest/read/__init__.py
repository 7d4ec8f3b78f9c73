"""Reading files by format into SourceLines that keep the original line numbers (text, Markdown, reST, source code, HTML, PDF)."""
