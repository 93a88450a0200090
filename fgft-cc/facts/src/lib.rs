//! fgft-facts: what the planner needs to know about a driver.
