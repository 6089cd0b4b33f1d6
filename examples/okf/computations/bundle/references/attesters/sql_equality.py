"""An attester a bundle names in attester.resource. agentkernel never imports or runs it.

Importing it writes a marker file beside it: the tests prove the marker never appears.
"""

from pathlib import Path

Path(__file__).with_name("IMPORTED-sql_equality").write_text("bundle code ran\n")
