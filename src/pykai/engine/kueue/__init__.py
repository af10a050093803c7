"""Kueue's admission as the engine works it out: quota, flavors, order, preemption, placement."""
