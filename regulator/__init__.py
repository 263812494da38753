"""regulator: a control plane for agentic software development, after Beer's Viable System Model.

The core package. It never imports Textual: the control room lives in the top-level ``tui``
package and imports this one, never the reverse.
"""

__version__ = "0.1.0"
