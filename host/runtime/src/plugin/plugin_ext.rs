//! [`PluginExt`]: a typed method per operation on every [`Plugin`], generated from the
//! one list of operations.

use crate::calls::Reply;
use crate::plugin::call_error::Result;
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
                // Out of line: inlined, the `Call` is built in the caller's frame,
                // whose stack slots the optimiser shares with the answer's, and the
                // arguments were copied into it byte-piecewise, each piece stalling
                // on the store just made (a sixth of a native unchanged update).
                #[inline(never)]
                fn $method<'a>(&mut self, $($arg: $ty),*) -> crate::Result<$answer> {
                    match self.call(crate::Call::$variant { $($arg),* }) {
                        Ok(crate::Reply::$reply(answer)) => Ok(answer),
                        other => crate::unexpected_reply($wit, other),
                    }
                }
            )*
        }
    };
}

crate::for_each_operation!(define_plugin_ext);

impl<P: Plugin + ?Sized> PluginExt for P {}

/// What a typed method answers when `result`, the answer to `call`, is not the kind of
/// answer the call makes: its error, or a panic for another kind (every layer passes
/// its inner plugin's answer on as it is, so that is a host bug, and the typed methods
/// stop on it rather than guess).
///
/// Out of line and cold: the typed methods' common path then only moves the answer
/// out, instead of the whole `Result<Reply>` into another layout (piecewise copies that
/// cost a native call a third of its time).
#[doc(hidden)]
#[cold]
#[inline(never)]
pub fn unexpected_reply<T>(call: &'static str, result: Result<Reply>) -> Result<T> {
    match result {
        Err(e) => Err(e),
        Ok(reply) => panic!("{call} was answered with {reply:?}: a layer of the host answered another call's reply"),
    }
}
