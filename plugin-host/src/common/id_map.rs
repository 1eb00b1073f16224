//! One line of a user namespace's `uid_map` or `gid_map` (user_namespaces(7)), prepared
//! before it is written: the host's and the agent's user namespaces
//! ([`crate::common::user_namespace`]) and the agent's network namespace
//! ([`crate::agent::egress_bridge`]) map the operator's own ids to themselves.

/// `"<id> <id> 1\n"` of one id, held in a fixed buffer so writing it allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdMap {
    buf: [u8; 32],
    len: usize,
}

impl IdMap {
    /// The map of `id` to itself, one id wide.
    pub(crate) fn identity(id: u32) -> Self {
        let text = format!("{id} {id} 1\n");
        let mut buf = [0u8; 32];
        buf[..text.len()].copy_from_slice(text.as_bytes());
        IdMap {
            buf,
            len: text.len(),
        }
    }

    /// The line's bytes, as written to `/proc/<pid>/uid_map` or `gid_map`.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::IdMap;

    #[test]
    fn an_identity_map_is_one_line_mapping_the_id_to_itself() {
        assert_eq!(IdMap::identity(0).bytes(), b"0 0 1\n");
        assert_eq!(
            IdMap::identity(u32::MAX).bytes(),
            format!("{0} {0} 1\n", u32::MAX).as_bytes()
        );
    }
}
