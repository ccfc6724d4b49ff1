//! [`LogicVersion`]: the logic versions with a built-in plugin, defined from the table
//! the build script generates (`foreach_logic_version!`).

use podstatus_logic::StatusManager;
use podstatus_runtime::Contract;

use crate::native_imports::WorldImports;

/// Defines [`LogicVersion`] from the rows of `foreach_logic_version!`.
macro_rules! define_logic_version {
    ($(
        $variant:ident $name:literal $program:literal $component:ident $($policy:ident)::+ $native:ident $help:literal;
    )*) => {
        /// A logic version with a built-in plugin in this checkout (`guest/plugins`'
        /// `podstatus-vN`): what `--logic` chooses, in the order of its choices.
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

            /// Its name on the command line (`v1`).
            pub fn name(self) -> &'static str {
                match self {
                    $(LogicVersion::$variant => $name,)*
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
    /// The one named `name` on the command line (`v1`).
    pub fn named(name: &str) -> Option<LogicVersion> {
        LogicVersion::ALL.iter().copied().find(|version| version.name() == name)
    }
}
