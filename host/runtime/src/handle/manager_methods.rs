//! [`manager_methods!`](crate::manager_methods): the Manager operations as typed
//! methods of a handle, generated from the one list of operations.

/// Defines, inside an `impl` block of a type with a method
/// `fn call(&self, call: ManagerCall<'_>) -> Result<Reply>`, one typed method per
/// Manager operation (`set_pod_status(&self, pod, status)`), each making its
/// [`ManagerCall`](crate::ManagerCall) through that `call`: so a handle, or a layer
/// over one (the agent's timed manager), is written once for every operation.
#[macro_export]
macro_rules! manager_methods {
    () => {
        $crate::for_each_operation!($crate::__manager_methods);
    };
}

/// The callback of [`manager_methods!`](crate::manager_methods): the `manager` group's
/// methods, the others ignored.
#[doc(hidden)]
#[macro_export]
macro_rules! __manager_methods {
    (
        manager { $(
            $(#[$doc:meta])*
            $variant:ident $method:ident $wit:literal $effect:ident
                ($($arg:ident : $ty:ty),* $(,)?) -> $reply:ident($answer:ty);
        )* }
        sync { $($sync:tt)* }
        state { $($state:tt)* }
    ) => {
        $(
            $(#[$doc])*
            #[allow(clippy::needless_lifetimes, clippy::extra_unused_lifetimes)]
            pub fn $method<'a>(&self, $($arg: $ty),*) -> $crate::Result<$answer> {
                let call = $crate::ManagerCall::$variant { $($arg),* };
                match self.call(call) {
                    Ok($crate::Reply::$reply(answer)) => Ok(answer),
                    other => $crate::unexpected_reply(call.name(), other),
                }
            }
        )*
    };
}
