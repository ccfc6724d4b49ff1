//! [`PluginExt`]: a typed method per operation on every [`Plugin`], generated from the
//! one list of operations.

use crate::plugin::plugin_trait::Plugin;

/// Defines [`PluginExt`] from the list of operations.
macro_rules! define_plugin_ext {
    (manager { $($manager:tt)* } sync { $($sync:tt)* } state { $($state:tt)* }) => {
        define_plugin_ext!(@all $($manager)* $($sync)* $($state)*);
    };
    (@all $(
        $(#[$doc:meta])*
        $variant:ident $method:ident $wit:literal $effect:ident
            ($($arg:ident : $ty:ty),* $(,)?) -> $reply:ident($answer:ty);
    )*) => {
        /// The operations as typed methods of every [`Plugin`]: each makes its
        /// [`Call`](crate::Call) through [`Plugin::call`] and unpacks the answer.
        /// Implemented for every plugin and meant to be called, never implemented: a
        /// layer over a plugin implements `call`, once.
        #[allow(clippy::needless_lifetimes, clippy::extra_unused_lifetimes)]
        pub trait PluginExt: Plugin {
            $(
                $(#[$doc])*
                fn $method<'a>(&mut self, $($arg: $ty),*) -> crate::Result<$answer> {
                    let call = crate::Call::$variant { $($arg),* };
                    match self.call(call)? {
                        crate::Reply::$reply(answer) => Ok(answer),
                        other => other.mismatched(call.name()),
                    }
                }
            )*
        }
    };
}

crate::for_each_operation!(define_plugin_ext);

impl<P: Plugin + ?Sized> PluginExt for P {}
