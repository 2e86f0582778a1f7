//! `mongo-stress sweep`: how the deployment scales with concurrency. A step runs the profile
//! closed loop with every group at N users; without a list of users, N doubles from 1 until
//! throughput fell at two steps in a row, then steps between the best and its neighbours bracket
//! the peak. The Universal Scalability Law is fitted to the steps (`usl`).
//!
//! Owns: the choice of the next step, the measure of a step and the reasons to stop, the fit.
//! Never: runs anything (`app::sweep` does) or formats text (`report::sweep`).

pub mod usl;
