//! [`Call`]: one call of the status manager, whatever the operation, as every layer
//! between a caller and a plugin passes it on; [`ManagerCall`], the calls a node's
//! callers may make; [`Effect`], what a call does to the plugin's state. All generated
//! from the one list of operations ([`for_each_operation!`](crate::for_each_operation)).

/// What a call does to the plugin's state document (what a swap moves and the
/// supervisor keeps a copy of).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Leaves it as it was.
    Reads,
    /// May change it.
    Writes,
    /// A status update: may change it, unless its answer says that nothing changed (the
    /// kubelet's most common call: a status reported again).
    Updates,
}

/// `Some(value)` when the argument `$arg` is the one named `$wanted`, else `None`: how
/// the generated accessors find a pod's JSON and a pod's UID among a call's arguments.
macro_rules! if_named {
    (pod_uid, pod_uid, $value:expr) => {
        Some($value)
    };
    (pod, pod, $value:expr) => {
        Some($value)
    };
    ($wanted:ident, $arg:ident, $value:expr) => {
        None
    };
}

/// Whether the reply variant `$reply` is a status update's outcome.
macro_rules! is_update {
    (Update) => {
        true
    };
    ($reply:ident) => {
        false
    };
}

/// Defines [`Call`], [`ManagerCall`] and their names from the list of operations.
macro_rules! define_calls {
    (manager { $($manager:tt)* } sync { $($sync:tt)* } state { $($state:tt)* }) => {
        define_calls!(@all [$($manager)* $($sync)* $($state)*] @manager [$($manager)*]);
    };
    (
        @all [$(
            $(#[$doc:meta])*
            $variant:ident $method:ident $wit:literal $effect:ident
                ($($arg:ident : $ty:ty),* $(,)?) -> $reply:ident($answer:ty);
        )*]
        @manager [$(
            $(#[$manager_doc:meta])*
            $manager_variant:ident $manager_method:ident $manager_wit:literal $manager_effect:ident
                ($($manager_arg:ident : $manager_ty:ty),* $(,)?) -> $manager_reply:ident($manager_answer:ty);
        )*]
    ) => {
        /// One call of the status manager (an export of the WIT `manager` interface), its
        /// arguments borrowed: what a caller hands [`Plugin::call`](crate::Plugin::call),
        /// and what every layer in between (the supervisor, the metered plugin, the
        /// handle) passes on, written once for every operation. Cheap to copy.
        #[derive(Clone, Copy, Debug)]
        pub enum Call<'a> {
            $(
                $(#[$doc])*
                #[allow(missing_docs)]
                $variant { $($arg: $ty),* },
            )*
        }

        /// One of the calls a node's callers make (the Manager operations of
        /// [`ManagerHandle`](crate::ManagerHandle)): the syncs are the scheduler's and
        /// the state document is the swap's, so a handle takes no other.
        #[derive(Clone, Copy, Debug)]
        pub enum ManagerCall<'a> {
            $(
                $(#[$manager_doc])*
                #[allow(missing_docs)]
                $manager_variant { $($manager_arg: $manager_ty),* },
            )*
        }

        impl<'a> From<ManagerCall<'a>> for Call<'a> {
            fn from(call: ManagerCall<'a>) -> Call<'a> {
                match call {
                    $(
                        ManagerCall::$manager_variant { $($manager_arg),* } =>
                            Call::$manager_variant { $($manager_arg),* },
                    )*
                }
            }
        }

        impl<'a> Call<'a> {
            /// The WIT export it calls (`set-pod-status`): how errors, logs and the
            /// supervisor's fault counts name it.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Call::$variant { .. } => $wit,)*
                }
            }

            /// Its label in the metrics (`set_pod_status`), as the typed method is named.
            pub fn metric_name(&self) -> &'static str {
                match self {
                    $(Call::$variant { .. } => stringify!($method),)*
                }
            }

            /// What it does to the plugin's state.
            pub fn effect(&self) -> Effect {
                match self {
                    $(Call::$variant { .. } => Effect::$effect,)*
                }
            }

            /// Whether it may change the plugin's state.
            pub fn changes_state(&self) -> bool {
                self.effect() != Effect::Reads
            }

            /// Whether it is a status update: it answers [`Reply::Update`](crate::Reply::Update),
            /// and a new status version of a pod starts on its way to the API server
            /// when the answer says so.
            pub fn updates_status(&self) -> bool {
                match self {
                    $(Call::$variant { .. } => is_update!($reply),)*
                }
            }

            /// The pod's JSON it hands the plugin, if it hands one (an argument `pod`).
            #[allow(unused_variables)]
            pub fn pod_json(&self) -> Option<&'a str> {
                match self {
                    $(Call::$variant { $($arg),* } => None $(.or(if_named!(pod, $arg, *$arg)))*,)*
                }
            }

            /// The pod UID it names, if it names one (an argument `pod_uid`).
            #[allow(unused_variables)]
            pub fn pod_uid(&self) -> Option<&'a str> {
                match self {
                    $(Call::$variant { $($arg),* } => None $(.or(if_named!(pod_uid, $arg, *$arg)))*,)*
                }
            }
        }
    };
}

crate::for_each_operation!(define_calls);

impl ManagerCall<'_> {
    /// See [`Call::name`].
    pub fn name(&self) -> &'static str {
        Call::from(*self).name()
    }

    /// See [`Call::metric_name`].
    pub fn metric_name(&self) -> &'static str {
        Call::from(*self).metric_name()
    }
}
