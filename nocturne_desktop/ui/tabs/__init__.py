"""The window's five tabs, one module each: Memory, Timeline, Diff, Sleep, Wake."""
