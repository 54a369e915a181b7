"""What runs before and around the window: the platform check (before Qt loads), start-up
helpers and the packaged app's self-test."""
