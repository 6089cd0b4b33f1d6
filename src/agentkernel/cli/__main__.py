"""``python -m agentkernel.cli`` runs the ``agentkernel-kb`` command."""

import sys

from agentkernel.cli import main

sys.exit(main())
