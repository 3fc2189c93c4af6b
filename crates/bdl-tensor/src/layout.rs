//! [`ParamLayout`]: named segments over one flat parameter vector.
//!
//! A network's parameters live in one flat vector θ ∈ ℝᴰ. The layout names its segments in
//! PyTorch `state_dict` order and naming (`0.weight` of shape `[out, in]`, `0.bias`, `2.weight`,
//! …), so that a safetensors file written from a PyTorch `nn.Sequential` loads as is, and so that
//! every other part of bdl (Gibbs blocks, subnetwork masks, optimiser state, checkpoints)
//! addresses parameters by flat index in one fixed order.
//!
//! A *layer* is a `<prefix>.weight` segment with its optional `<prefix>.bias`. A *node* of a layer
//! is one output unit: its weight row (everything under one index of the weight's first axis,
//! `fan_in` numbers) followed by its bias. A node's *sub-blocks* split that list into consecutive
//! pieces.

use std::collections::HashMap;
use std::ops::Range;

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// One named tensor inside the flat parameter vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// The `state_dict` name, e.g. `2.weight`.
    pub name: String,
    /// The tensor's shape, e.g. `[out, in]` for a dense weight.
    pub shape: Vec<usize>,
    /// Index of the segment's first element in the flat vector.
    pub offset: usize,
}

impl Segment {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The flat indices of the segment.
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.numel()
    }

    /// Whether this segment is a weight (its name ends in `weight`), as opposed to a bias.
    pub fn is_weight(&self) -> bool {
        self.name.ends_with("weight")
    }
}

/// A layer: a weight segment and its bias, both as indices into [`ParamLayout::segments`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Index of the `<prefix>.weight` segment.
    pub weight: usize,
    /// Index of the `<prefix>.bias` segment, if the layer has one.
    pub bias: Option<usize>,
}

/// How to split a node's parameters into finer blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SubBlocks {
    /// Blocks of about `k` consecutive parameters: ⌊len / k⌋ (at least one) blocks of near-equal
    /// size, so each holds at least `k` (when the node has that many) and fewer than 2k.
    Size(usize),
    /// Exactly this many blocks of near-equal size (fewer if the node has fewer parameters).
    Count(usize),
}

/// Ordered named segments over one flat parameter vector.
///
/// ```
/// use bdl_tensor::ParamLayout;
/// let layout = ParamLayout::new([("0.weight", vec![3, 2]), ("0.bias", vec![3])]);
/// assert_eq!(layout.len(), 9);
/// assert_eq!(layout.node(0, 1), vec![2, 3, 7]); // weight row 1, then bias 1
/// assert_eq!(layout.weights_mask().iter().filter(|&&w| w).count(), 6);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamLayout {
    segments: Vec<Segment>,
}

impl ParamLayout {
    /// Lays the named shapes out one after the other, in the given order.
    ///
    /// # Panics
    /// If two segments share a name.
    #[track_caller]
    pub fn new<N: Into<String>>(named_shapes: impl IntoIterator<Item = (N, Vec<usize>)>) -> Self {
        let mut offset = 0;
        let mut segments: Vec<Segment> = Vec::new();
        for (name, shape) in named_shapes {
            let name = name.into();
            assert!(
                segments.iter().all(|s| s.name != name),
                "ParamLayout: duplicate segment name `{name}`"
            );
            let segment = Segment {
                name,
                shape,
                offset,
            };
            offset += segment.numel();
            segments.push(segment);
        }
        Self { segments }
    }

    /// The number of parameters D.
    pub fn len(&self) -> usize {
        self.segments.last().map_or(0, |s| s.offset + s.numel())
    }

    /// Whether the layout holds no parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The segments, in flat order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The segment called `name`.
    pub fn segment(&self, name: &str) -> Option<&Segment> {
        self.segments.iter().find(|s| s.name == name)
    }

    /// The layers: each `<prefix>.weight` with its `<prefix>.bias`, in flat order.
    pub fn layers(&self) -> Vec<Layer> {
        self.segments
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let prefix = s.name.strip_suffix("weight")?;
                let bias_name = format!("{prefix}bias");
                let bias = self.segments.iter().position(|b| b.name == bias_name);
                Some(Layer { weight: i, bias })
            })
            .collect()
    }

    fn layer(&self, layer: usize) -> Layer {
        let layers = self.layers();
        *layers.get(layer).unwrap_or_else(|| {
            panic!(
                "ParamLayout: layer {layer} out of range ({} layers)",
                layers.len()
            )
        })
    }

    /// The flat indices of layer `layer` (its weight and bias), ascending.
    #[track_caller]
    pub fn layer_indices(&self, layer: usize) -> Vec<usize> {
        let l = self.layer(layer);
        let mut idx: Vec<usize> = self.segments[l.weight].range().collect();
        if let Some(b) = l.bias {
            idx.extend(self.segments[b].range());
        }
        idx
    }

    /// The number of nodes (output units) of layer `layer`.
    #[track_caller]
    pub fn n_nodes(&self, layer: usize) -> usize {
        self.segments[self.layer(layer).weight].shape[0]
    }

    /// The flat indices of node `node` of layer `layer`: its weight row, then its bias.
    #[track_caller]
    pub fn node(&self, layer: usize, node: usize) -> Vec<usize> {
        let l = self.layer(layer);
        let w = &self.segments[l.weight];
        let n_nodes = w.shape[0];
        assert!(
            node < n_nodes,
            "ParamLayout: node {node} out of range (layer {layer} has {n_nodes})"
        );
        let fan_in = w.numel() / n_nodes;
        let start = w.offset + node * fan_in;
        let mut idx: Vec<usize> = (start..start + fan_in).collect();
        if let Some(b) = l.bias {
            idx.push(self.segments[b].offset + node);
        }
        idx
    }

    /// The node blocks of every layer, first layer first.
    pub fn node_blocks(&self) -> Vec<Vec<usize>> {
        (0..self.layers().len())
            .flat_map(|l| (0..self.n_nodes(l)).map(move |o| (l, o)))
            .map(|(l, o)| self.node(l, o))
            .collect()
    }

    /// Node `node` of layer `layer` cut into consecutive sub-blocks of near-equal size (the first
    /// `len % count` blocks one longer).
    #[track_caller]
    pub fn node_sub_blocks(&self, layer: usize, node: usize, split: SubBlocks) -> Vec<Vec<usize>> {
        let idx = self.node(layer, node);
        let count = match split {
            SubBlocks::Size(k) => {
                assert!(k > 0, "SubBlocks::Size needs k > 0");
                (idx.len() / k).max(1)
            }
            SubBlocks::Count(m) => {
                assert!(m > 0, "SubBlocks::Count needs m > 0");
                m.min(idx.len())
            }
        };
        let (base, extra) = (idx.len() / count, idx.len() % count);
        let mut blocks = Vec::with_capacity(count);
        let mut start = 0;
        for b in 0..count {
            let len = base + usize::from(b < extra);
            blocks.push(idx[start..start + len].to_vec());
            start += len;
        }
        blocks
    }

    /// `true` at the flat index of every weight, `false` at every bias.
    pub fn weights_mask(&self) -> Vec<bool> {
        self.segments
            .iter()
            .flat_map(|s| std::iter::repeat_n(s.is_weight(), s.numel()))
            .collect()
    }

    /// The segments of a flat vector θ (shape `[D]`) as tensors of their own shapes (views,
    /// differentiable when θ is a `Var`).
    pub fn split(&self, flat: &Tensor) -> Result<Vec<Tensor>> {
        self.check_flat(flat)?;
        self.segments
            .iter()
            .map(|s| {
                Ok(flat
                    .narrow(0, s.offset, s.numel())?
                    .reshape(s.shape.as_slice())?)
            })
            .collect()
    }

    /// Concatenates named tensors into the flat vector, in layout order.
    ///
    /// Errors name the first tensor that is missing, of the wrong shape, or not in the layout.
    pub fn flatten(
        &self,
        named: &HashMap<String, Tensor>,
        source: &std::path::Path,
    ) -> Result<Tensor> {
        if let Some(name) = named.keys().find(|n| self.segment(n).is_none()) {
            return Err(Error::UnexpectedTensor {
                path: source.to_path_buf(),
                name: name.clone(),
            });
        }
        let parts = self
            .segments
            .iter()
            .map(|s| {
                let t = named.get(&s.name).ok_or_else(|| Error::MissingTensor {
                    path: source.to_path_buf(),
                    name: s.name.clone(),
                })?;
                crate::check_shape(
                    t,
                    &s.shape,
                    &format!("{}: tensor `{}`", source.display(), s.name),
                )?;
                Ok(t.flatten_all()?)
            })
            .collect::<Result<Vec<_>>>()?;
        let dtype = parts.first().map(Tensor::dtype);
        let parts = parts
            .into_iter()
            .map(|p| Ok(p.to_dtype(dtype.unwrap_or(candle_core::DType::F32))?))
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&parts, 0)?)
    }

    /// The named segments of a flat vector, for saving.
    pub fn named(&self, flat: &Tensor) -> Result<Vec<(String, Tensor)>> {
        Ok(self
            .segments
            .iter()
            .map(|s| s.name.clone())
            .zip(self.split(flat)?)
            .collect())
    }

    /// Checks that `flat` is a vector of length D.
    pub fn check_flat(&self, flat: &Tensor) -> Result<()> {
        crate::check_shape(flat, &[self.len()], "flat parameter vector")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Seed, normal};
    use candle_core::{DType, Device};
    use proptest::prelude::*;

    fn mlp_layout(widths: &[usize]) -> ParamLayout {
        ParamLayout::new(widths.windows(2).enumerate().flat_map(|(l, w)| {
            [
                (format!("{}.weight", 2 * l), vec![w[1], w[0]]),
                (format!("{}.bias", 2 * l), vec![w[1]]),
            ]
        }))
    }

    proptest! {
        #[test]
        fn split_then_flatten_round_trips(
            widths in proptest::collection::vec(1usize..6, 2..5),
            seed in any::<u64>(),
        ) {
            let layout = mlp_layout(&widths);
            let flat = normal(&mut Seed(seed).rng(), layout.len(), 0.0, 1.0, DType::F64, &Device::Cpu).unwrap();
            let named: HashMap<String, Tensor> = layout.named(&flat).unwrap().into_iter().collect();
            let back = layout.flatten(&named, std::path::Path::new("memory")).unwrap();
            let (a, b): (Vec<f64>, Vec<f64>) = (flat.to_vec1().unwrap(), back.to_vec1().unwrap());
            prop_assert_eq!(a, b);
        }

        #[test]
        fn nodes_partition_the_parameters(widths in proptest::collection::vec(1usize..6, 2..5)) {
            let layout = mlp_layout(&widths);
            let mut all: Vec<usize> = layout.node_blocks().concat();
            all.sort_unstable();
            prop_assert_eq!(all, (0..layout.len()).collect::<Vec<_>>());
        }

        #[test]
        fn sub_blocks_partition_a_node(fan_in in 1usize..900, k in 1usize..100) {
            let layout = ParamLayout::new([("0.weight", vec![2, fan_in]), ("0.bias", vec![2])]);
            for split in [SubBlocks::Size(k), SubBlocks::Count(k)] {
                let blocks = layout.node_sub_blocks(0, 1, split);
                let sizes: Vec<usize> = blocks.iter().map(Vec::len).collect();
                prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
                prop_assert_eq!(blocks.concat(), layout.node(0, 1));
            }
        }
    }

    #[test]
    fn paper_finer_node_blocks() {
        // A first-layer node of the MNIST MLP has 784 weights and a bias: 785 parameters. The
        // author's code cuts it into 78 sub-blocks of about 10, the paper's text into 10 of 78-79.
        let layout = ParamLayout::new([("0.weight", vec![10, 784]), ("0.bias", vec![10])]);
        assert_eq!(layout.node_sub_blocks(0, 0, SubBlocks::Size(10)).len(), 78);
        let ten = layout.node_sub_blocks(0, 0, SubBlocks::Count(10));
        assert_eq!(
            ten.iter().map(Vec::len).collect::<Vec<_>>(),
            [79, 79, 79, 79, 79, 78, 78, 78, 78, 78]
        );
    }

    #[test]
    fn layers_and_mask() {
        let layout = mlp_layout(&[3, 4, 2]);
        assert_eq!(layout.layers().len(), 2);
        assert_eq!(layout.layer_indices(1), (16..26).collect::<Vec<_>>());
        let mask = layout.weights_mask();
        assert_eq!(mask.iter().filter(|&&w| w).count(), 12 + 8);
        assert!(!mask[12] && mask[16]);
    }

    #[test]
    fn flatten_names_what_is_wrong() {
        let layout = mlp_layout(&[2, 3]);
        let dev = Device::Cpu;
        let mut named = HashMap::new();
        named.insert(
            "0.weight".to_owned(),
            Tensor::zeros((3, 2), DType::F32, &dev).unwrap(),
        );
        let err = layout
            .flatten(&named, std::path::Path::new("m.safetensors"))
            .unwrap_err();
        assert!(
            matches!(err, Error::MissingTensor { ref name, .. } if name == "0.bias"),
            "{err}"
        );
        named.insert(
            "0.bias".to_owned(),
            Tensor::zeros(4, DType::F32, &dev).unwrap(),
        );
        let err = layout
            .flatten(&named, std::path::Path::new("m.safetensors"))
            .unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
        named.insert(
            "0.bias".to_owned(),
            Tensor::zeros(3, DType::F32, &dev).unwrap(),
        );
        named.insert(
            "9.weight".to_owned(),
            Tensor::zeros(3, DType::F32, &dev).unwrap(),
        );
        let err = layout
            .flatten(&named, std::path::Path::new("m.safetensors"))
            .unwrap_err();
        assert!(
            matches!(err, Error::UnexpectedTensor { ref name, .. } if name == "9.weight"),
            "{err}"
        );
    }
}
