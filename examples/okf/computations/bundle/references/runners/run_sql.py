"""A runner a bundle names in executor.resource. agentkernel never imports or runs it.

Importing it writes a marker file beside it: the tests prove the marker never appears.
"""

from pathlib import Path

Path(__file__).with_name("IMPORTED-run_sql").write_text("bundle code ran\n")
