//! The launcher's build, written into a section of its own of the `plugin-host` executable
//! and read back from the file by the supervisor without running it (docs/security.md "The
//! launcher").
//!
//! [`SECTION`] holds this build's [`BUILD_ID`] (16 ASCII hex digits) in the ELF section
//! [`SECTION_NAME`]; the launcher's own `--build-id` prints those very bytes
//! ([`embedded`]), so what the file says and what the program answers cannot differ. The
//! supervisor reads the section from the descriptor it holds and executes
//! ([`read`]: the ELF header, the section headers and their names, then 16 bytes), which
//! saves an exec of the launcher at every boot. When the file is not a 64-bit
//! little-endian ELF executable of this machine, or has no such section, [`read`] answers
//! `None` and the caller asks the launcher itself (`--build-id`), as before. The check is
//! one of two: every plan carries the supervisor's build and the launcher refuses a plan of
//! another build ([`crate::common::plan`]).

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::common::plan::BUILD_ID;

/// The section's name in the `plugin-host` executable.
pub const SECTION_NAME: &str = ".agent_runner.build_id";

/// The section's length: [`BUILD_ID`]'s 16 hex digits.
pub const SECTION_LEN: usize = 16;

/// [`BUILD_ID`] as the section's bytes (checked at compile time to be 16 bytes long).
const fn section_bytes() -> [u8; SECTION_LEN] {
    let id = BUILD_ID.as_bytes();
    assert!(id.len() == SECTION_LEN, "BUILD_ID is 16 hex digits");
    let mut out = [0u8; SECTION_LEN];
    let mut i = 0;
    while i < SECTION_LEN {
        out[i] = id[i];
        i += 1;
    }
    out
}

/// This build's [`BUILD_ID`], in the section [`SECTION_NAME`] of every executable that
/// uses [`embedded`] (the `plugin-host` launcher).
#[used]
#[link_section = ".agent_runner.build_id"]
pub static SECTION: [u8; SECTION_LEN] = section_bytes();

/// The build this executable carries in its section: what `plugin-host --build-id` prints.
/// Reading the section through its address keeps it in the executable (the linker drops
/// sections nothing refers to).
pub fn embedded() -> String {
    let bytes: &[u8; SECTION_LEN] = std::hint::black_box(&SECTION);
    String::from_utf8_lossy(bytes).into_owned()
}

/// `e_machine` of this machine's executables (`None`: not read here, the launcher is asked).
const MACHINE: Option<u16> = if cfg!(target_arch = "x86_64") {
    Some(62) // EM_X86_64
} else if cfg!(target_arch = "aarch64") {
    Some(183) // EM_AARCH64
} else {
    None
};

/// At most this many section headers are read (an executable of ours has about 40).
const MAX_SECTIONS: u64 = 1024;
/// At most this many bytes of section names are read.
const MAX_NAMES: u64 = 64 << 10;

/// The build `file` carries in its section [`SECTION_NAME`], when `file` is a 64-bit
/// little-endian ELF executable of this machine with that section, 16 bytes long, of ASCII
/// hex digits; `None` otherwise (not ELF, another machine, no such section, a short read,
/// any size out of bounds): the caller then runs the launcher to ask it. Reads through
/// `pread`, leaving the file's offset alone.
pub fn read(file: &File) -> Option<String> {
    let machine = MACHINE?;
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    // e_ident: magic, ELFCLASS64, ELFDATA2LSB; e_type ET_EXEC or ET_DYN; e_machine.
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    if !matches!(u16_at(&header, 0x10), 2 | 3) || u16_at(&header, 0x12) != machine {
        return None;
    }
    let shoff = u64_at(&header, 0x28);
    let shentsize = u64::from(u16_at(&header, 0x3a));
    let shnum = u64::from(u16_at(&header, 0x3c));
    let shstrndx = u64::from(u16_at(&header, 0x3e));
    if shentsize != 64 || shnum == 0 || shnum > MAX_SECTIONS || shstrndx >= shnum {
        return None;
    }
    let mut table = vec![0u8; (shnum * shentsize) as usize];
    file.read_exact_at(&mut table, shoff).ok()?;
    let section = |i: u64| &table[(i * shentsize) as usize..((i + 1) * shentsize) as usize];
    // Section header: sh_name at 0, sh_offset at 0x18, sh_size at 0x20.
    let names = section(shstrndx);
    let (names_at, names_len) = (u64_at(names, 0x18), u64_at(names, 0x20));
    if names_len > MAX_NAMES {
        return None;
    }
    let mut names = vec![0u8; names_len as usize];
    file.read_exact_at(&mut names, names_at).ok()?;
    let wanted = SECTION_NAME.as_bytes();
    let found = (0..shnum).map(section).find(|header| {
        let at = u32_at(header, 0) as usize;
        names
            .get(at..)
            .and_then(|rest| rest.split(|b| *b == 0).next())
            .is_some_and(|name| name == wanted)
    })?;
    if u64_at(found, 0x20) != SECTION_LEN as u64 {
        return None;
    }
    let mut id = [0u8; SECTION_LEN];
    file.read_exact_at(&mut id, u64_at(found, 0x18)).ok()?;
    id.iter()
        .all(u8::is_ascii_hexdigit)
        .then(|| String::from_utf8_lossy(&id).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_section_holds_this_build() {
        assert_eq!(embedded(), BUILD_ID);
    }

    #[test]
    fn what_is_not_an_elf_executable_of_this_machine_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("plugin-host");
        std::fs::write(&script, format!("#!/bin/sh\necho {BUILD_ID}\n")).unwrap();
        assert_eq!(read(&File::open(&script).unwrap()), None);
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(read(&File::open(&empty).unwrap()), None);
        // An ELF header claiming more sections than the file holds: a short read, None.
        let mut header = vec![0u8; 64];
        header[..6].copy_from_slice(b"\x7fELF\x02\x01");
        header[0x10] = 3;
        header[0x12..0x14].copy_from_slice(&MACHINE.unwrap_or(0).to_le_bytes());
        header[0x28] = 64;
        header[0x3a] = 64;
        header[0x3c] = 40;
        header[0x3e] = 1;
        let cut = dir.path().join("cut");
        File::create(&cut).unwrap().write_all(&header).unwrap();
        assert_eq!(read(&File::open(&cut).unwrap()), None);
    }

    #[test]
    fn an_executable_is_read_with_the_section_and_without_it() {
        // This test binary carries the section (it calls `embedded`); /bin/sh does not.
        let this = File::open(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(read(&this).as_deref(), Some(BUILD_ID));
        assert_eq!(read(&File::open("/bin/sh").unwrap()), None);
    }
}
