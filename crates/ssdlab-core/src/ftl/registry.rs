//! One macro declares a family of interchangeable policies (GC victim selection, free-block
//! allocation, wear leveling, placement, mapping) from a list of registration lines
//! `"name" => Variant(module::Type)`. It generates:
//!
//! * `pub mod module;` for each policy (the policy is that one file);
//! * the config enum: a TOML table tagged by `policy = "name"` whose other keys are the
//!   policy's `module::Params` (serde, unknown keys rejected), with `name()`;
//! * the runtime enum over the policy types, built from the config by `new(cfg, ctx)`
//!   through the family's trait constructor;
//! * `dispatch!(value, p => expr)`: a `match` that runs `expr` with `p` bound to the
//!   concrete policy, so calls are statically dispatched (inlined, no allocation).
//!
//! Adding a policy is one file (with `Params` and a type implementing the family's trait)
//! plus one registration line.

macro_rules! policy_registry {
    (
        $d:tt
        $(#[$cmeta:meta])*
        config $Config:ident default $Default:ident;
        $(#[$rmeta:meta])*
        runtime $Runtime:ident: $Trait:ident($Ctx:ty);
        $( $name:literal => $Variant:ident($module:ident :: $Type:ident) ),+ $(,)?
    ) => {
        $( pub mod $module; )+

        $(#[$cmeta])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "policy")]
        pub enum $Config {
            $( #[serde(rename = $name)] $Variant($module::Params), )+
        }

        impl Default for $Config {
            fn default() -> Self {
                $Config::$Default(Default::default())
            }
        }

        impl $Config {
            /// The name used in configs and result tables.
            pub fn name(&self) -> &'static str {
                match self {
                    $( $Config::$Variant(_) => $name, )+
                }
            }

            /// Every registered policy name.
            pub const NAMES: &'static [&'static str] = &[$($name),+];
        }

        $(#[$rmeta])*
        #[derive(Clone)]
        pub enum $Runtime {
            $( $Variant($module::$Type), )+
        }

        impl $Runtime {
            /// The policy `cfg` names, built for `ctx`.
            pub fn new(cfg: &$Config, ctx: &$Ctx) -> $Runtime {
                match cfg {
                    $( $Config::$Variant(p) => $Runtime::$Variant(<$module::$Type as $Trait>::new(p, ctx)), )+
                }
            }
        }

        #[allow(unused_macros)]
        macro_rules! dispatch {
            ($d s:expr, $d p:ident => $d e:expr) => {
                match $d s {
                    $( $Runtime::$Variant($d p) => $d e, )+
                }
            };
        }
    };
}

pub(crate) use policy_registry;
