"""The lane stage: the lane census (the table and the tree agree) and the steps of a lane run
(the command each target runs in its lane, one run per board for qualification tools)."""
