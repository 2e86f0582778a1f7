//! `history`: many runs of one plan as series per label and metric, and the change points in
//! each (E-Divisive means with Hunter's t-test, `edivisive`).

pub mod edivisive;
