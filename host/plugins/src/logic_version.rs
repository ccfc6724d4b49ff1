//! [`LogicVersion`]: the logic versions with a built-in plugin, defined from the table
//! the build script generates (`foreach_logic_version!`).

use podstatus_logic::{Follows, StatusManager, WriteMode};
use podstatus_runtime::Contract;

use crate::native_imports::WorldImports;

/// Defines [`LogicVersion`] from the rows of `foreach_logic_version!`.
macro_rules! define_logic_version {
    ($(
        $variant:ident $name:literal $alias:literal $program:literal $component:ident $($policy:ident)::+
        $native:ident $help:literal;
    )*) => {
        /// A logic version with a built-in plugin in this checkout (`guest/plugins`'
        /// `podstatus-*` programs): what `--logic` chooses, in the order of its choices.
        /// Each follows a Kubernetes release's status manager ([`LogicVersion::release`])
        /// in a write mode ([`LogicVersion::mode`]); the variant is named after its
        /// program (`V2` is `1.27`, whose program is still `podstatus-v2`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum LogicVersion {
            $(
                #[doc = $help]
                $variant,
            )*
        }

        impl LogicVersion {
            /// Every one, in the order of `--logic`'s choices.
            pub const ALL: &'static [LogicVersion] = &[$(LogicVersion::$variant),*];

            /// Its name on the command line: the release and mode it follows
            /// (`1.35`, `1.35-one-call`), or `v1` for the seed.
            pub fn name(self) -> &'static str {
                match self {
                    $(LogicVersion::$variant => $name,)*
                }
            }

            /// The name it was first known by (`v2` for `1.27`, `v3` for
            /// `1.27-one-call`, `v4` for `1.35-one-call`), still taken everywhere a
            /// name is.
            pub fn alias(self) -> Option<&'static str> {
                match self {
                    $(LogicVersion::$variant => Some($alias).filter(|a: &&str| !a.is_empty()),)*
                }
            }

            /// Its built-in plugin's program (`podstatus-v1`): the component's file stem
            /// beside the guest build, and a fleet's `logic` metric label.
            pub fn program(self) -> &'static str {
                match self {
                    $(LogicVersion::$variant => $program,)*
                }
            }

            /// Its built-in plugin, as component bytes.
            pub fn component(self) -> &'static [u8] {
                match self {
                    $(LogicVersion::$variant => crate::$component,)*
                }
            }

            /// What it is, in a line (its `--logic` choice's help).
            pub fn help(self) -> &'static str {
                match self {
                    $(LogicVersion::$variant => $help,)*
                }
            }

            /// The Kubernetes release whose status manager decides (`1.35`; `2017` for
            /// the seed's kubelet), from its policy's type.
            pub fn release(self) -> &'static str {
                match self {
                    $(LogicVersion::$variant => <$($policy)::+ as Follows>::RELEASE,)*
                }
            }

            /// How it writes (`read-then-patch`, `one-call`; the seed's
            /// `read-then-update`), from its policy's type.
            pub fn mode(self) -> &'static str {
                match self {
                    $(LogicVersion::$variant => <$($policy)::+ as Follows>::MODE,)*
                }
            }

            /// Its manager linked natively over `imports`, and the contract it answers
            /// as (a 0.1.x plugin's: each sync's calls made at once, inside the call).
            pub(crate) fn native(self, imports: WorldImports) -> (Box<dyn StatusManager + Send>, Contract) {
                match self {
                    $(
                        LogicVersion::$variant => (
                            Box::new(podstatus_logic::Manager::<WorldImports, $($policy)::+>::new(imports)),
                            Contract::$native,
                        ),
                    )*
                }
            }
        }
    };
}

foreach_logic_version!(define_logic_version);

impl LogicVersion {
    /// The one named `name` on the command line (`1.27`), or by its alias (`v2`).
    pub fn named(name: &str) -> Option<LogicVersion> {
        LogicVersion::ALL.iter().copied().find(|version| version.name() == name || version.alias() == Some(name))
    }

    /// The `--logic` name and alias (when it has one) that a built-in component names
    /// itself by in its custom section ([`crate::LOGIC_SECTION`]), whether or not this
    /// checkout knows the name; None for a component without the section.
    pub fn named_in(component: &[u8]) -> Option<(&str, Option<&str>)> {
        let text = std::str::from_utf8(custom_section(component, crate::LOGIC_SECTION)?).ok()?;
        let mut words = text.split(' ');
        let name = words.next().filter(|n| !n.is_empty())?;
        Some((name, words.next()))
    }

    /// Whether it writes in the one-call mode (no GET before a write).
    pub fn one_call(self) -> bool {
        self.mode() == <podstatus_logic::OneCall as WriteMode>::NAME
    }

    /// Whether it writes as upstream does: a GET, a merge over the status read, a PATCH.
    pub fn reads_then_patches(self) -> bool {
        self.mode() == <podstatus_logic::ReadThenPatch as WriteMode>::NAME
    }

    /// What it is, in a line: its release and mode, as `--help` and `podstatus
    /// inspect` say them.
    pub fn follows(self) -> String {
        let release = match self.release() {
            "2017" => "the 2017 kubelet (the seed)".to_string(),
            release => format!("Kubernetes {release}'s status manager"),
        };
        let mode = match self.mode() {
            "read-then-patch" => "reading the pod, then patching its status (as upstream writes)",
            "one-call" => "one UID-guarded PATCH per status version, no GET (the one-call write mode)",
            "read-then-update" => "reading the pod, then replacing its whole status",
            other => other,
        };
        format!("{release}, {mode}")
    }
}

/// The payload of the first top-level custom section `name` of a WebAssembly module
/// or component (each section: an id byte, its size as unsigned LEB128, its content;
/// a custom section's content: its name's size and bytes, then the payload).
fn custom_section<'a>(wasm: &'a [u8], name: &str) -> Option<&'a [u8]> {
    fn leb128(bytes: &[u8], at: &mut usize) -> Option<usize> {
        let mut value = 0usize;
        for shift in (0..35).step_by(7) {
            let byte = *bytes.get(*at)?;
            *at += 1;
            value |= usize::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    let mut at = 8; // the magic number and the version
    while at < wasm.len() {
        let id = wasm[at];
        at += 1;
        let size = leb128(wasm, &mut at)?;
        let content = wasm.get(at..at.checked_add(size)?)?;
        at += size;
        if id == 0 {
            let mut inner = 0;
            let name_len = leb128(content, &mut inner)?;
            let section_name = content.get(inner..inner.checked_add(name_len)?)?;
            if section_name == name.as_bytes() {
                return content.get(inner + name_len..);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's names say what the policies' types follow: a release's name in
    /// upstream's write mode, `-one-call` after it in the one-call mode.
    #[test]
    fn each_name_is_its_release_and_mode() {
        for version in LogicVersion::ALL.iter().copied() {
            let expected = match (version.release(), version.mode()) {
                ("2017", "read-then-update") => "v1".to_string(),
                (release, "read-then-patch") => release.to_string(),
                (release, "one-call") => format!("{release}-one-call"),
                other => panic!("{version:?}: unknown {other:?}"),
            };
            assert_eq!(version.name(), expected, "{version:?}");
            assert_eq!(LogicVersion::named(version.name()), Some(version));
            if let Some(alias) = version.alias() {
                assert_eq!(LogicVersion::named(alias), Some(version));
            }
        }
    }

    #[test]
    fn each_component_names_its_logic_version() {
        for version in LogicVersion::ALL.iter().copied() {
            assert_eq!(LogicVersion::named_in(version.component()), Some((version.name(), version.alias())));
        }
        assert_eq!(LogicVersion::named_in(crate::PODSTATUS_V2_ON_0_1), None, "not a built-in plugin");
        assert_eq!(LogicVersion::named_in(b"\0asm\x0d\0\x01\0\0\x03\x01"), None, "truncated");
    }

    #[test]
    fn the_first_names_stay_aliases() {
        let named = |name: &str| LogicVersion::named(name).map(LogicVersion::name);
        assert_eq!(named("v1"), Some("v1"));
        assert_eq!(named("v2"), Some("1.27"));
        assert_eq!(named("v3"), Some("1.27-one-call"));
        assert_eq!(named("v4"), Some("1.35-one-call"));
        assert_eq!(named("1.37"), Some("1.37"));
        assert_eq!(named("v5"), None);
    }
}
