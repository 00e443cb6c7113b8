"""What OpenCode and Kilo (a fork that kept OpenCode's store, log and config) share: one reader of their records
(store, calls, rollout) and one launch config (launch)."""
