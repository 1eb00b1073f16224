//! Which phase a round runs in: `[phases] list` rotates, round N taking entry
//! `(N - 1) mod len` (round numbers start at 1). Without a list every round has no phase
//! (`AGENT_RUNNER_PHASE=""`, `phase: null`). `doctor --rounds N` prints the plan.

use serde_json::{json, Value};

/// The phase of round `round_num` (≥ 1) under `list`; `None` when the list is empty.
pub fn phase_for_round(list: &[String], round_num: u64) -> Option<&str> {
    if list.is_empty() {
        return None;
    }
    let index = (round_num.saturating_sub(1) % list.len() as u64) as usize;
    Some(list[index].as_str())
}

/// The plan of `count` rounds starting at `first`: `[{round_num, phase}]`.
pub fn plan(list: &[String], first: u64, count: u64) -> Vec<Value> {
    (first..first.saturating_add(count))
        .map(|n| json!({"round_num": n, "phase": phase_for_round(list, n)}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_from_round_one() {
        let list = vec!["plan".to_owned(), "build".to_owned()];
        assert_eq!(phase_for_round(&list, 1), Some("plan"));
        assert_eq!(phase_for_round(&list, 2), Some("build"));
        assert_eq!(phase_for_round(&list, 3), Some("plan"));
        assert_eq!(phase_for_round(&[], 3), None);
        let p = plan(&list, 4, 2);
        assert_eq!(
            p,
            vec![
                json!({"round_num": 4, "phase": "build"}),
                json!({"round_num": 5, "phase": "plan"})
            ]
        );
    }
}
