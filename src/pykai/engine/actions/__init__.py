"""The actions of a scheduling cycle, in KAI's default order."""
