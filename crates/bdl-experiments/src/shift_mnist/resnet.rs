//! The ResNet rows ([`ResnetRows`]): their methods and units, whether a run has them, and their
//! fits from each seed's ResNet MAP.

use std::time::Instant;

use anyhow::Result;
use bdl_inference::Posterior as _;
use bdl_methods::SharedFits;
use bdl_models::{Model as _, Network, ResNet};
use candle_core::DType;

use super::settings::{ResnetRows, ResnetSettings, Settings};
use super::{
    Key, Method, Prepared, Row, Unit, fit_row, from_map, score, seed_root, spec, train_from,
};
use crate::units::{SeedMaps, Units};
use crate::{Context, Profile, Sharding};

/// The ResNet rows' methods, in table order, and their lines' colours.
pub(super) const RESNET_METHODS: [Method; 5] = [
    Method::Map,
    Method::DiagLaplace,
    Method::Swag,
    Method::SubnetWasserstein,
    Method::SubnetRandom,
];
pub(super) const RESNET_PALETTE: [&str; 5] =
    ["#6b6ecf", "#b5cf6b", "#e7ba52", "#d6616b", "#ce6dbd"];

/// The ResNet rows' fits of one seed, one unit each, as the LeNet-5 rows' groups.
pub(super) const RESNET_GROUPS: [&[Method]; 3] = [
    &[Method::Map],
    &[Method::DiagLaplace],
    &[
        Method::Swag,
        Method::SubnetWasserstein,
        Method::SubnetRandom,
    ],
];

/// A run's ResNet rows: their settings, the LeNet-5 rows' data on the run's device, and their
/// units.
pub(super) struct Resnet {
    pub(super) rows: ResnetRows,
    data: Prepared,
    pub(super) units: Units,
}

impl Resnet {
    /// The run's ResNet rows, if it has them: in the smoke profile, and in the paper profile on
    /// a GPU or in a merge whose units include them (a merge computes nothing, so it takes
    /// the rows a GPU shard computed, and a missing one is the usual merge error).
    pub(super) fn new(
        ctx: &Context,
        settings: &Settings,
        lenet: &Prepared,
    ) -> Result<Option<Self>> {
        let Some(rows) = ResnetRows::of(ctx.profile) else {
            if !ctx.device.is_cpu() {
                ctx.log(format!(
                    "the {} profile has no ResNet rows: every fit runs on the CPU",
                    ctx.profile.name()
                ));
            }
            return Ok(None);
        };
        let units = Units::new(
            ctx,
            &ResnetSettings {
                settings,
                resnet: Some(&rows),
            },
        )?;
        let first = Unit::Resnet { seed: 0, group: 0 }.key(&[]);
        let wanted = match ctx.profile {
            Profile::Paper => {
                !ctx.device.is_cpu() || (ctx.sharding == Sharding::Merge && units.saved(&first))
            }
            Profile::Smoke | Profile::Quick => true,
        };
        if !wanted {
            return Ok(None);
        }
        Ok(Some(Self {
            rows,
            data: lenet.to_device(&ctx.device)?,
            units,
        }))
    }

    /// Every unit of the rows, over `seeds` seeds.
    pub(super) fn all(&self, seeds: usize) -> Vec<Unit> {
        (0..seeds)
            .flat_map(|seed| {
                (0..RESNET_GROUPS.len()).map(move |group| Unit::Resnet { seed, group })
            })
            .collect()
    }

    /// The slots of each seed's ResNet MAP, on the rows' device.
    pub(super) fn maps(&self, seeds: usize) -> SeedMaps<'_> {
        SeedMaps::new("resnet-map", seeds, &self.units, self.data.fit.x().device())
    }

    /// The rows of group `group` on seed `seed`: the seed's ResNet MAP (trained as LeNet-5's,
    /// on the rows' device, from streams of its own) and each method's spec fitted from it,
    /// subnetworks of the rows' size.
    pub(super) fn fit(
        &self,
        settings: &Settings,
        maps: &SeedMaps<'_>,
        seed: usize,
        group: usize,
    ) -> Result<Vec<Row>> {
        let (data, root) = (&self.data, seed_root(seed).fork("resnet"));
        let start = Instant::now();
        let map = maps.get(seed, || {
            let net = Network::from(ResNet::new(self.rows.network.clone())?);
            let theta0 = net.init(root.fork("init"), DType::F32, data.fit.x().device())?;
            train_from(&net, &theta0, data, settings, root)
        })?;
        let map_s = start.elapsed().as_secs_f64();
        let (n_fit, d) = (data.fit.len(), map.network().layout().len());
        let (subnet, inputs) = (self.rows.subnet_size, &data.inputs);
        // The group's SWAG row trains the SWAG its Wasserstein subnetwork ranks by.
        let shared = SharedFits::default();
        (RESNET_GROUPS[group].iter())
            .map(|&method| {
                let key = Key::Resnet { resnet: method };
                match spec(method, settings, subnet, n_fit, d, root) {
                    None => score(key, &map, Some(seed), None, map_s, inputs, settings),
                    Some(spec) => {
                        let problem = from_map(&map, data).with_shared(&shared);
                        fit_row(key, &spec, &problem, seed, inputs, settings)
                    }
                }
            })
            .collect()
    }
}
