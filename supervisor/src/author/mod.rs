//! The host author's verbs: [`plugin_check`] runs a host through the protocol rule by rule;
//! [`plugin_new`] scaffolds a working host in Rust or Python.

pub(crate) mod plugin_check;
pub(crate) mod plugin_new;
