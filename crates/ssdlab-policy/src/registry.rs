//! One macro declares a family of interchangeable policies (GC victim selection, free-block
//! allocation, wear leveling, placement, mapping, erase suspension) from a list of
//! registration lines `/// doc` `"name" => Variant(module::Type)`. It generates:
//!
//! * `pub mod module;` for each policy (the policy is that one file);
//! * the config enum: a TOML table tagged by `policy = "name"` whose other keys are the
//!   policy's `module::Params` (serde, unknown keys rejected), with `name()`, `NAMES`,
//!   `by_name()` (the policy with default parameters) and `describe()` (name, the
//!   registration line's doc, default parameters: `ssdlab policies`);
//! * `swarm()` / `swarm_any()`: a policy with parameters drawn for the swarm test by its
//!   `Params` ([`super::PolicyParams::swarm`]), each policy (and each family's choice) on a
//!   random stream of its own;
//! * `params()`: the config's parameters as `&dyn` the family's params trait (a subtrait of
//!   [`super::PolicyParams`]), so a family's checks and capabilities (memory cost, regions
//!   needed, …) are methods of each policy's `Params` with defaults, and `check()`;
//! * the runtime enum over the policy types, built from the config by `new(cfg, ctx)`
//!   through the family's trait constructor;
//! * `dispatch!(value, p => expr)`: a `match` that runs `expr` with `p` bound to the
//!   concrete policy, so calls are statically dispatched (inlined, no allocation).
//!
//! Every match over a family's policies is generated here, so a new policy cannot be
//! missed by one: adding a policy is one file (with `Params`, its params-trait impl and a
//! type implementing the family's trait) plus one registration line.

macro_rules! policy_registry {
    (
        $d:tt
        $(#[$cmeta:meta])*
        config $Config:ident default $Default:ident;
        $(#[$rmeta:meta])*
        runtime $Runtime:ident: $Trait:ident($Ctx:ty);
        params $Params:path;
        $( $(#[doc = $doc:literal])* $name:literal => $Variant:ident($module:ident :: $Type:ident) ),+ $(,)?
    ) => {
        $( pub mod $module; )+

        $(#[$cmeta])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "policy")]
        pub enum $Config {
            $( $(#[doc = $doc])* #[serde(rename = $name)] $Variant($module::Params), )+
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

            /// The policy called `name`, with its default parameters.
            pub fn by_name(name: &str) -> Option<$Config> {
                match name {
                    $( $name => Some($Config::$Variant(Default::default())), )+
                    _ => None,
                }
            }

            /// The parameters, as the family's params trait (checks and capabilities).
            pub fn params(&self) -> &dyn $Params {
                match self {
                    $( $Config::$Variant(p) => p, )+
                }
            }

            /// The policy parameter that is out of range (its key within the table), and why.
            pub fn check(&self) -> Result<(), (&'static str, String)> {
                $crate::PolicyParams::check(self.params())
            }

            /// The policy `name` with parameters drawn for the swarm test from the policy's
            /// own stream of case `seed` ([`PolicyParams::swarm`](crate::PolicyParams::swarm)),
            /// so adding a policy re-deals no other policy's draws; `None` for an unknown name.
            pub fn swarm(name: &str, seed: u64, ctx: &$crate::SwarmCtx) -> Option<$Config> {
                match name {
                    $( $name => Some($Config::$Variant(
                        <$module::Params as $crate::PolicyParams>::swarm(
                            &mut $crate::swarm_rng(seed, concat!(stringify!($Config), "/", $name)),
                            ctx,
                        ),
                    )), )+
                    _ => None,
                }
            }

            /// A policy of the family drawn for the swarm test from the family's own stream
            /// of case `seed`, with its swarm parameters ([`Self::swarm`]).
            pub fn swarm_any(seed: u64, ctx: &$crate::SwarmCtx) -> $Config {
                let rng = &mut $crate::swarm_rng(seed, stringify!($Config));
                let name = Self::NAMES[rand::Rng::gen_range(rng, 0..Self::NAMES.len())];
                Self::swarm(name, seed, ctx).unwrap_or_default()
            }

            /// Every policy: name, one-line doc and default parameters.
            pub fn describe() -> Vec<$crate::PolicyInfo> {
                vec![$(
                    $crate::PolicyInfo::new(
                        $name,
                        &[$($doc),*],
                        &<$module::Params as Default>::default(),
                    ),
                )+]
            }
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
