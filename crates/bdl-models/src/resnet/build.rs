//! The layers of a ResNet and its `state_dict` layout, built stage by stage.

use bdl_tensor::ParamLayout;

use super::pool::MaxPool;
use super::{BatchStatistics, Block, Layer, Op, ResNetSpec, Stem};
use crate::cnn::im2col::Unfold;
use crate::cnn::step::{FeatureMaps, Order};
use crate::{Error, Result};

/// The parametrised layers in `state_dict` order, with the layout they lay out.
pub(super) struct Built {
    pub(super) layout: ParamLayout,
    pub(super) layers: Vec<Layer>,
    /// The stem's convolution and normalisation.
    pub(super) stem: (usize, usize),
    /// The ImageNet stem's max pooling.
    pub(super) pool: Option<MaxPool>,
    pub(super) blocks: Vec<Block>,
    /// The classifier's layer.
    pub(super) fc: usize,
    /// The maps entering the global average pooling.
    pub(super) last: FeatureMaps,
    /// The name of every normalisation, in layer order (for error messages and the
    /// `state_dict`'s running statistics).
    pub(super) norm_names: Vec<String>,
}

/// Lays out the network of `spec`: the stem `conv1`/`bn1` (and the ImageNet stem's pooling),
/// then `layer{i}.{b}` blocks
/// (`conv1`, `bn1`, `conv2`, `bn2`, and `downsample.0`/`downsample.1` where the shape
/// changes), then `fc`, as torchvision's `resnet18` names them.
pub(super) fn build(spec: &ResNetSpec) -> Result<Built> {
    let [channels, height, width] = spec.input;
    let mut b = Builder {
        shapes: Vec::new(),
        layers: Vec::new(),
        norm_names: Vec::new(),
    };
    let input = FeatureMaps {
        channels,
        height,
        width,
        order: Order::ChannelsFirst,
    };
    let (kernel, stride) = match spec.stem {
        Stem::Cifar => (3, 1),
        Stem::Imagenet => (7, 2),
    };
    let (conv, mut maps) = b.conv("conv1", input, spec.widths[0], kernel, stride)?;
    let stem = (conv, b.norm("bn1", maps));
    let pool = match spec.stem {
        Stem::Cifar => None,
        Stem::Imagenet => {
            let pool = MaxPool::new(maps)?;
            maps = pool.output();
            Some(pool)
        }
    };
    let mut blocks = Vec::new();
    for (stage, (&planes, &count)) in spec.widths.iter().zip(&spec.blocks).enumerate() {
        for i in 0..count {
            let stride = if stage > 0 && i == 0 { 2 } else { 1 };
            let name = format!("layer{}.{i}", stage + 1);
            let block_input = maps;
            let (conv1, mid) = b.conv(&format!("{name}.conv1"), maps, planes, 3, stride)?;
            let bn1 = b.norm(&format!("{name}.bn1"), mid);
            let (conv2, out) = b.conv(&format!("{name}.conv2"), mid, planes, 3, 1)?;
            let bn2 = b.norm(&format!("{name}.bn2"), out);
            let shortcut = if stride != 1 || block_input.channels != planes {
                let (conv, short) = b.conv(
                    &format!("{name}.downsample.0"),
                    block_input,
                    planes,
                    1,
                    stride,
                )?;
                Some((conv, b.norm(&format!("{name}.downsample.1"), short)))
            } else {
                None
            };
            blocks.push(Block {
                conv1,
                bn1,
                conv2,
                bn2,
                shortcut,
            });
            maps = out;
        }
    }
    let fc = b.linear("fc", maps.channels, spec.classes);
    Ok(Built {
        layout: ParamLayout::new(b.shapes),
        layers: b.layers,
        stem,
        pool,
        blocks,
        fc,
        last: maps,
        norm_names: b.norm_names,
    })
}

/// The statistics of every normalisation: the spec's, checked against the layers, or the
/// identity ones.
pub(super) fn statistics(spec: &ResNetSpec, built: &Built) -> Result<Vec<BatchStatistics>> {
    let channels: Vec<usize> = built
        .layers
        .iter()
        .filter(|l| matches!(l.op, Op::Norm { .. }))
        .map(|l| l.width)
        .collect();
    let Some(stats) = &spec.statistics else {
        return Ok(channels
            .into_iter()
            .map(BatchStatistics::identity)
            .collect());
    };
    if stats.len() != channels.len() {
        return Err(Error::InvalidConfig(format!(
            "the spec holds statistics for {} batch normalisations; the network has {}",
            stats.len(),
            channels.len()
        )));
    }
    for ((s, c), name) in stats.iter().zip(channels).zip(&built.norm_names) {
        s.check(c, name)?;
    }
    Ok(stats.clone())
}

struct Builder {
    shapes: Vec<(String, Vec<usize>)>,
    layers: Vec<Layer>,
    norm_names: Vec<String>,
}

impl Builder {
    /// A k × k convolution without bias (padding ⌊k/2⌋) of `input` to `out` channels: its layer
    /// and its channel-last output maps.
    fn conv(
        &mut self,
        name: &str,
        input: FeatureMaps,
        out: usize,
        kernel: usize,
        stride: usize,
    ) -> Result<(usize, FeatureMaps)> {
        let unfold = Unfold::new(input, kernel, kernel / 2, stride)
            .map_err(|e| Error::InvalidConfig(format!("`{name}`: {e}")))?;
        let (height, width) = unfold.output_size();
        let layer = Layer {
            positions: unfold.positions(),
            fan_in: unfold.patch_len(),
            width: out,
            weight: self.shapes.len(),
            bias: None,
            op: Op::Conv(unfold),
        };
        self.shapes.push((
            format!("{name}.weight"),
            vec![out, input.channels, kernel, kernel],
        ));
        self.layers.push(layer);
        let maps = FeatureMaps {
            channels: out,
            height,
            width,
            order: Order::ChannelsLast,
        };
        Ok((self.layers.len() - 1, maps))
    }

    /// A batch normalisation of `maps`' channels: γ as `{name}.weight`, β as `{name}.bias`.
    fn norm(&mut self, name: &str, maps: FeatureMaps) -> usize {
        let layer = Layer {
            op: Op::Norm {
                index: self.norm_names.len(),
            },
            positions: maps.height * maps.width,
            fan_in: 1,
            width: maps.channels,
            weight: self.shapes.len(),
            bias: Some(self.shapes.len() + 1),
        };
        self.shapes
            .push((format!("{name}.weight"), vec![maps.channels]));
        self.shapes
            .push((format!("{name}.bias"), vec![maps.channels]));
        self.norm_names.push(name.to_owned());
        self.layers.push(layer);
        self.layers.len() - 1
    }

    /// A dense layer `fan_in` → `width` with bias.
    fn linear(&mut self, name: &str, fan_in: usize, width: usize) -> usize {
        let layer = Layer {
            op: Op::Linear,
            positions: 1,
            fan_in,
            width,
            weight: self.shapes.len(),
            bias: Some(self.shapes.len() + 1),
        };
        self.shapes
            .push((format!("{name}.weight"), vec![width, fan_in]));
        self.shapes.push((format!("{name}.bias"), vec![width]));
        self.layers.push(layer);
        self.layers.len() - 1
    }
}
